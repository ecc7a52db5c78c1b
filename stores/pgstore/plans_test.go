package pgstore

import (
	"context"
	"strings"
	"testing"
)

// Queue tables are often empty when autoanalyze looks (a drained queue),
// and plans made from those statistics then run against a busy table. The
// FIFO send's dedup lookup must stay a lookup by the whole primary key even
// so: joined with the queue row it once became a walk over the entire
// index, 3× the CPU per message on the bench.
func TestSendDedupLookupUsesWholeKeyOnEmptyStatistics(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "p.fifo", true)
	// A table that held many markers and holds none now, analyzed so.
	for _, sql := range []string{
		`INSERT INTO dedup (queue_id, scope, dedup_id, message_id, seq, created_at, expires_at)
			SELECT 'other', '', 'd' || i, 'm' || i, '1', now(), now() FROM generate_series(1, 20000) i`,
		"DELETE FROM dedup",
		"ANALYZE dedup",
	} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var in sendPlanArgs
	rows, err := s.pool.Query(ctx, "EXPLAIN "+sendFIFOSQL, in.args(q.Name, q.ID)...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	found := false
	for i, line := range plan {
		if strings.Contains(line, "on dedup d ") && i+1 < len(plan) {
			found = true
			if cond := plan[i+1]; !strings.Contains(line, "Index") || !strings.Contains(cond, "Index Cond") || !strings.Contains(cond, "queue_id") {
				t.Errorf("the dedup lookup does not use the whole key:\n%s", text)
			}
		}
	}
	if !found {
		t.Errorf("no dedup lookup in the plan:\n%s", text)
	}
}

// sendPlanArgs are placeholder arguments for sendFIFOSQL.
type sendPlanArgs struct{}

func (sendPlanArgs) args(name, id string) []any {
	one := []string{""}
	return []any{name, id, nil, []string{"m"}, []string{"g"}, []string{"d"}, []string{"body"}, [][]byte{nil}, [][]byte{nil},
		one, one, one, one, []int64{0}, one, int64(300_000_000)}
}
