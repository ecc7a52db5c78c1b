// Package cost turns what a variant of sluice measurably did under a
// workload into dollars a month, beside what native Amazon SQS would bill
// for the same workload.
//
// A run (Measure) drives a workload through the SQS HTTP API with
// infra/bench's load generator and keeps what the server's counters and
// the operating system say it did over the measured window: requests by
// action and the time they were in flight, the store's billed operations,
// the wake-up transport's billed requests and bytes, the CPU-seconds of
// the server and of PostgreSQL, the server's peak RSS. Price turns one
// measurement into a monthly bill at any message rate, from the dated
// price table (prices.json) and assumptions that are all printed with the
// result (Assumptions). Report writes the comparison: report.md, charts
// (SVG, and PNG when rsvg-convert is there) and the raw counts.
package cost

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// Workload is what a cost run drives: a small JSON file.
type Workload struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Rates are the message rates (messages/s) measured; more than one is a
	// sweep, and a price at another rate uses the measurement nearest to it
	// on a log scale.
	Rates     []float64 `json:"rates"`
	BodyBytes int       `json:"body_bytes"`
	// BatchFill, 1 to 10, is the messages per send (SendMessageBatch above
	// 1), the most a receive asks for, and so the most a delete call
	// carries.
	BatchFill int  `json:"batch_fill"`
	FIFO      bool `json:"fifo"`
	Groups    int  `json:"groups"`
	Producers int  `json:"producers,omitempty"`
	Consumers int  `json:"consumers"`
	// LongPollShare, 0 to 1, is the share of consumers that long-poll
	// (WaitTimeSeconds); the rest short-poll. It is rounded to whole
	// consumers, at least one either way when strictly between 0 and 1.
	LongPollShare   float64 `json:"long_poll_share"`
	WaitTimeSeconds int     `json:"wait_time_seconds,omitempty"`
	// EmptyReceiveShare is the share of receives expected to come back
	// empty. It is not driven: it follows from the rate, the consumers and
	// how they poll (a short poll that finds nothing asks again after 2 to
	// 64 ms); a measured run prices what it saw and prints this beside it.
	EmptyReceiveShare float64 `json:"empty_receive_share"`
	// ResidenceSeconds is how long a message is stored on average: what
	// storage is priced from.
	ResidenceSeconds float64 `json:"residence_seconds"`
	// PeakToMean sizes provisioned capacity (Cloud SQL, a VM, Spanner
	// processing units) for the peak rather than the mean rate.
	PeakToMean float64 `json:"peak_to_mean"`
}

//go:embed workloads/*.json
var shipped embed.FS

// Workloads are the named workloads shipped in infra/cost/workloads.
func Workloads() ([]Workload, error) {
	ents, err := fs.ReadDir(shipped, "workloads")
	if err != nil {
		return nil, err
	}
	var out []Workload
	for _, e := range ents {
		data, err := shipped.ReadFile(path.Join("workloads", e.Name()))
		if err != nil {
			return nil, err
		}
		w, err := ParseWorkload(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// LoadWorkload is a shipped workload by name, or the workload file at
// nameOrPath.
func LoadWorkload(nameOrPath string) (Workload, error) {
	if !strings.ContainsAny(nameOrPath, "/.") {
		ws, err := Workloads()
		if err != nil {
			return Workload{}, err
		}
		var names []string
		for _, w := range ws {
			if w.Name == nameOrPath {
				return w, nil
			}
			names = append(names, w.Name)
		}
		return Workload{}, fmt.Errorf("no workload %q (shipped: %s; or give a file)", nameOrPath, strings.Join(names, ", "))
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		return Workload{}, err
	}
	return ParseWorkload(data)
}

// ParseWorkload reads and checks a workload file, filling defaults.
func ParseWorkload(data []byte) (Workload, error) {
	var w Workload
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("workload: %w", err)
	}
	if w.BatchFill == 0 {
		w.BatchFill = 1
	}
	if w.Groups == 0 {
		w.Groups = 1
	}
	if w.Producers == 0 {
		w.Producers = 4
	}
	if w.Consumers == 0 {
		w.Consumers = 4
	}
	if w.LongPollShare > 0 && w.WaitTimeSeconds == 0 {
		w.WaitTimeSeconds = 20
	}
	if w.PeakToMean == 0 {
		w.PeakToMean = 1
	}
	return w, w.check()
}

func (w Workload) check() error {
	switch {
	case w.Name == "":
		return errors.New("workload: no name")
	case len(w.Rates) == 0:
		return errors.New("workload: no rates")
	case w.BodyBytes < 64 || w.BodyBytes > 256*1024:
		return fmt.Errorf("workload: body_bytes %d: 64 to 262144 (the load generator's header takes ~40)", w.BodyBytes)
	case w.BatchFill < 1 || w.BatchFill > 10:
		return fmt.Errorf("workload: batch_fill %d: 1 to 10", w.BatchFill)
	case w.LongPollShare < 0 || w.LongPollShare > 1:
		return fmt.Errorf("workload: long_poll_share %v: 0 to 1", w.LongPollShare)
	case w.WaitTimeSeconds < 0 || w.WaitTimeSeconds > 20:
		return fmt.Errorf("workload: wait_time_seconds %d: 0 to 20", w.WaitTimeSeconds)
	case w.EmptyReceiveShare < 0 || w.EmptyReceiveShare >= 1:
		return fmt.Errorf("workload: empty_receive_share %v: 0 to below 1", w.EmptyReceiveShare)
	case w.ResidenceSeconds < 0 || w.PeakToMean < 1:
		return errors.New("workload: residence_seconds must not be negative, peak_to_mean at least 1")
	}
	for _, r := range w.Rates {
		if r <= 0 {
			return fmt.Errorf("workload: rate %v: must be positive", r)
		}
	}
	return nil
}

// Duration defaults of a measured run.
const (
	DefaultDuration = 20 * time.Second
	DefaultWarmup   = 3 * time.Second
)
