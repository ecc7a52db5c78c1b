package embedded

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

const (
	crashDirEnv     = "SLUICE_EMBEDDED_CRASH_DIR"
	crashReserveEnv = "SLUICE_EMBEDDED_CRASH_RESERVE" // the child's reserveSize
)

// TestCrashKeepsAcknowledged runs a child process (this test binary, running
// TestCrashChild) that sends messages from several goroutines and prints
// each acknowledged message id, and receives and deletes some of them and
// prints each acknowledged delete; it kills the child with SIGKILL in the
// middle of that, reopens the directory and requires every acknowledged
// message that was not deleted, and none that was. It runs with the
// journal's default size, which the run does not fill, and with a journal
// of a few kilobytes, which the child folds and writes over again and
// again.
func TestCrashKeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, reserve := range []int{reserveSize, 4 << 10} { // the second folds every few kilobytes
		t.Run(fmt.Sprintf("reserve=%d", reserve), func(t *testing.T) { crashKeepsAcknowledged(t, reserve) })
	}
}

func crashKeepsAcknowledged(t *testing.T, reserve int) {
	dir := t.TempDir()
	s := open(t, dir)
	createQueue(t, s, "crash", false, t0)
	createQueue(t, s, "crash.fifo", true, t0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashReserveEnv+"="+strconv.Itoa(reserve))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ack struct{ queue, id, seq string }
	var acks []ack
	deleted := map[string]bool{}  // queue/id: acknowledged deletes
	deleting := map[string]bool{} // queue/id: deletes that may have committed
	lines := bufio.NewScanner(out)
	read := func() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) >= 3 && f[0] == "ACK":
			a := ack{queue: f[1], id: f[2]}
			if len(f) > 3 {
				a.seq = f[3]
			}
			acks = append(acks, a)
		case len(f) == 3 && f[0] == "DEL":
			deleted[f[1]+"/"+f[2]] = true
		case len(f) == 3 && f[0] == "DELETING":
			deleting[f[1]+"/"+f[2]] = true
		}
	}
	const want = 400
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	for len(acks) < want && lines.Scan() {
		read()
	}
	deadline.Stop()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acks printed before the kill landed count too.
	for lines.Scan() {
		read()
	}
	werr := cmd.Wait()
	if len(acks) < want {
		t.Fatalf("child gave %d acks (exit %v); stderr:\n%s", len(acks), werr, stderr.String())
	}
	t.Logf("child killed after %d acknowledged sends and %d deletes (%v)", len(acks), len(deleted), werr)
	if len(deleted) == 0 {
		t.Fatalf("the child deleted nothing; stderr:\n%s", stderr.String())
	}

	s = open(t, dir)
	defer s.Close()
	stored := map[string]string{} // id -> sequence number
	for _, q := range []string{"crash", "crash.fifo"} {
		res := must(s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q, Max: 1 << 30, VisibilityTimeout: time.Minute,
			Token: "check", Now: time.Now().Add(time.Hour)}))
		for _, m := range res.Messages {
			stored[q+"/"+m.ID] = m.SequenceNumber
		}
	}
	maxSeq := ""
	for _, a := range acks {
		seq, ok := stored[a.queue+"/"+a.id]
		if deleted[a.queue+"/"+a.id] {
			if ok {
				t.Fatalf("message %s in %s came back after its acknowledged delete", a.id, a.queue)
			}
			continue
		}
		if !ok && deleting[a.queue+"/"+a.id] {
			continue // its delete committed, and the kill came before the acknowledgement
		}
		if !ok {
			t.Fatalf("acknowledged message %s in %s lost (%d acks, %d stored)", a.id, a.queue, len(acks), len(stored))
		}
		if seq != a.seq {
			t.Fatalf("message %s: sequence number %q, acknowledged %q", a.id, seq, a.seq)
		}
		if seq > maxSeq {
			maxSeq = seq
		}
	}
	// The sequence counter never goes back.
	next := must(s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "crash.fifo",
		Messages: []stores.NewMessage{{ID: "after", GroupID: "g", DedupID: "after"}}, DedupWindow: time.Minute}))
	if next.Results[0].SequenceNumber <= maxSeq {
		t.Fatalf("sequence number after restart %s, acknowledged up to %s", next.Results[0].SequenceNumber, maxSeq)
	}
}

// TestCrashChild is the child of TestCrashKeepsAcknowledged; it does nothing
// in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process of TestCrashKeepsAcknowledged")
	}
	if r, err := strconv.Atoi(os.Getenv(crashReserveEnv)); err == nil {
		reserveSize, foldBytes = r, int64(r)
	}
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	// Two consumers delete what they receive from the Standard queue.
	for c := range 2 {
		go func() {
			for i := 0; ; i++ {
				res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: "crash", Max: 3,
					VisibilityTimeout: time.Hour, Token: fmt.Sprintf("c%d-%d", c, i), Now: time.Now()})
				if err != nil {
					fmt.Fprintln(os.Stderr, "claim:", err)
					os.Exit(2)
				}
				for _, m := range res.Messages {
					mu.Lock()
					fmt.Fprintf(os.Stdout, "DELETING crash %s\n", m.ID)
					mu.Unlock()
					outs, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "crash",
						Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token}}, Now: time.Now()})
					if err != nil {
						fmt.Fprintln(os.Stderr, "delete:", err)
						os.Exit(2)
					}
					if outs.Outcomes[0] == stores.ReceiptCurrent {
						mu.Lock()
						fmt.Fprintf(os.Stdout, "DEL crash %s\n", m.ID)
						mu.Unlock()
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for w := range 8 {
		go func() {
			for i := 0; ; i++ {
				q, id := "crash", fmt.Sprintf("w%d-%d", w, i)
				if i%2 == 1 {
					q = "crash.fifo"
				}
				res, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q, DedupWindow: time.Minute,
					Messages: []stores.NewMessage{{ID: id, Body: strings.Repeat("x", 100*w), GroupID: fmt.Sprint(w), DedupID: id}}})
				if err != nil {
					fmt.Fprintln(os.Stderr, "send:", err)
					os.Exit(2)
				}
				mu.Lock()
				// os.Stdout is unbuffered: the line is out when Fprintf returns.
				fmt.Fprintf(os.Stdout, "ACK %s %s %s\n", q, id, res.Results[0].SequenceNumber)
				mu.Unlock()
			}
		}()
	}
	select {} // until killed
}
