package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

// QueueSpec is a queue to create at start (Config.Queues), as a queues file
// spells it:
//
//	{"queues": [
//	  {"name": "orders-dlq"},
//	  {"name": "orders", "attributes": {"VisibilityTimeout": 60},
//	   "deadLetterQueue": {"name": "orders-dlq", "maxReceiveCount": 5},
//	   "tags": {"team": "shop"}},
//	  {"name": "events.fifo", "attributes": {"ContentBasedDeduplication": true}}
//	]}
//
// Each goes through the service's CreateQueue, so every rule of CreateQueue
// applies, and applying it again is a no-op (a queue that exists with the
// same attributes is left as it is; one whose attributes differ is an
// error, QueueAlreadyExists, as CreateQueue says).
type QueueSpec struct {
	Name string `json:"name"`
	// Attributes are CreateQueue's; a value may be a string, a number, a
	// boolean, or (RedrivePolicy, RedriveAllowPolicy, Policy) a JSON object.
	// A name ending in .fifo implies FifoQueue true.
	Attributes map[string]AttributeValue `json:"attributes,omitempty"`
	// DeadLetterQueue sets RedrivePolicy by the dead-letter queue's name
	// (created first when the file has it too), without spelling its ARN.
	DeadLetterQueue *DeadLetterSpec   `json:"deadLetterQueue,omitempty"`
	Tags            map[string]string `json:"tags,omitempty"`
}

// DeadLetterSpec names a dead-letter queue and the receives before a
// message moves there.
type DeadLetterSpec struct {
	Name            string `json:"name"`
	MaxReceiveCount int    `json:"maxReceiveCount"`
}

// AttributeValue is an attribute value of a queues file, as CreateQueue
// wants it: a string.
type AttributeValue string

func (v *AttributeValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = AttributeValue(s)
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return err
		}
		*v = AttributeValue(buf.String())
	case string(b) == "true" || string(b) == "false":
		*v = AttributeValue(b)
	case string(b) == "null":
		return errors.New("an attribute value cannot be null")
	default:
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return fmt.Errorf("bad attribute value %s", b)
		}
		*v = AttributeValue(b)
	}
	return nil
}

type queuesFile struct {
	Queues []QueueSpec `json:"queues"`
}

// QueuesError is a queues file that cannot be applied: it cannot be read
// or parsed, or CreateQueue refused one of its queues. Entry points treat
// it as bad usage.
type QueuesError struct {
	Source string // the file, or "queues" for Config.Queues given directly
	Queue  string // the queue concerned, if one
	Err    error
}

func (e *QueuesError) Error() string {
	if e.Queue != "" {
		return fmt.Sprintf("%s: queue %q: %v", e.Source, e.Queue, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Source, e.Err)
}

func (e *QueuesError) Unwrap() error { return e.Err }

// LoadQueuesFile reads a queues file (JSON, see QueueSpec) and checks what
// can be checked without a store: the form, names given and unique, and
// dead-letter references without cycles.
func LoadQueuesFile(path string) ([]QueueSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &QueuesError{Source: path, Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f queuesFile
	if err := dec.Decode(&f); err != nil {
		return nil, &QueuesError{Source: path, Err: jsonErr(b, err)}
	}
	if dec.More() {
		return nil, &QueuesError{Source: path, Err: errors.New("unexpected data after the JSON object")}
	}
	if _, err := orderQueues(f.Queues); err != nil {
		err.Source = path
		return nil, err
	}
	return f.Queues, nil
}

// jsonErr adds the line of a syntax or type error.
func jsonErr(b []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return err
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

// orderQueues checks specs and orders them so that a dead-letter queue the
// list has comes before the queues that use it.
func orderQueues(specs []QueueSpec) ([]QueueSpec, *QueuesError) {
	byName := map[string]int{}
	for i, q := range specs {
		if q.Name == "" {
			return nil, &QueuesError{Source: "queues", Err: fmt.Errorf("queue %d has no name", i+1)}
		}
		if _, dup := byName[q.Name]; dup {
			return nil, &QueuesError{Source: "queues", Queue: q.Name, Err: errors.New("listed twice")}
		}
		byName[q.Name] = i
		if d := q.DeadLetterQueue; d != nil {
			if d.Name == "" {
				return nil, &QueuesError{Source: "queues", Queue: q.Name, Err: errors.New("deadLetterQueue has no name")}
			}
			if _, both := q.Attributes[contract.AttrRedrivePolicy]; both {
				return nil, &QueuesError{Source: "queues", Queue: q.Name, Err: errors.New("give deadLetterQueue or the RedrivePolicy attribute, not both")}
			}
		}
	}
	const (
		unseen = iota
		visiting
		placed
	)
	state := make([]int, len(specs))
	out := make([]QueueSpec, 0, len(specs))
	var visit func(i int, path []string) *QueuesError
	visit = func(i int, path []string) *QueuesError {
		switch state[i] {
		case placed:
			return nil
		case visiting:
			return &QueuesError{Source: "queues", Queue: specs[i].Name,
				Err: fmt.Errorf("dead-letter queues form a cycle: %s", strings.Join(append(path, specs[i].Name), " → "))}
		}
		state[i] = visiting
		if d := specs[i].DeadLetterQueue; d != nil {
			if j, ok := byName[d.Name]; ok {
				if err := visit(j, append(path, specs[i].Name)); err != nil {
					return err
				}
			}
		}
		state[i] = placed
		out = append(out, specs[i])
		return nil
	}
	for i := range specs {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// applyQueues creates the queues through the service, dead-letter queues
// first. A queue CreateQueue refuses is a *QueuesError; a store failure is
// returned as it is.
func applyQueues(ctx context.Context, svc *service.Service, source string, specs []QueueSpec) error {
	ordered, qerr := orderQueues(specs)
	if qerr != nil {
		qerr.Source = source
		return qerr
	}
	for _, q := range ordered {
		attrs := make(map[string]string, len(q.Attributes)+2)
		for k, v := range q.Attributes {
			attrs[k] = string(v)
		}
		if _, ok := attrs[contract.AttrFifoQueue]; !ok && strings.HasSuffix(q.Name, ".fifo") {
			attrs[contract.AttrFifoQueue] = "true"
		}
		if d := q.DeadLetterQueue; d != nil {
			arn, err := queueARN(ctx, svc, d.Name)
			if err != nil {
				return specErr(source, q.Name, fmt.Errorf("dead-letter queue %q: %w", d.Name, err))
			}
			rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": d.MaxReceiveCount})
			attrs[contract.AttrRedrivePolicy] = string(rp)
		}
		in := &contract.CreateQueueInput{QueueName: q.Name, Attributes: attrs, Tags: q.Tags}
		if _, err := svc.CreateQueue(ctx, in); err != nil {
			return specErr(source, q.Name, err)
		}
	}
	return nil
}

// specErr makes what the service refused a *QueuesError, and leaves
// failures of ours (InternalError, a cancelled start) as they are.
func specErr(source, queue string, err error) error {
	var ce *contract.Error
	if errors.As(err, &ce) && ce.Sender {
		return &QueuesError{Source: source, Queue: queue, Err: err}
	}
	return fmt.Errorf("%s: queue %q: %w", source, queue, err)
}

func queueARN(ctx context.Context, svc *service.Service, name string) (string, error) {
	u, err := svc.GetQueueUrl(ctx, &contract.GetQueueUrlInput{QueueName: name})
	if err != nil {
		return "", err
	}
	attrs, err := svc.GetQueueAttributes(ctx, &contract.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: []string{contract.AttrQueueArn}})
	if err != nil {
		return "", err
	}
	return attrs.Attributes[contract.AttrQueueArn], nil
}
