package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestScaleToZero serves every step from a process of its own, started for
// it and stopped after it, as a platform that scales to zero does: no
// instance survives from one step to the next, so nothing may depend on a
// background loop. Time passes between the steps in simulated time (each
// process runs on a clock further ahead, SLUICE_DEV_CLOCK_OFFSET), and
// what SQS does with time, the visibility timeout, the redrive to the
// dead-letter queue, retention, the dedup window and a message move task,
// must advance through requests and maintenance passes alone: `sluice
// maintain` and POST /_sluice/maintain, what a scheduler runs or calls.
// Signatures are checked, as a function's would be.
func TestScaleToZero(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { scaleToZero(t, "file://"+filepath.Join(t.TempDir(), "data")) })
	t.Run("firestore", func(t *testing.T) { scaleToZero(t, newFirestoreProject(t, requireFirestore(t))) })
}

func scaleToZero(t *testing.T, store string) {
	ctx := context.Background()
	step := 0
	const token = "maintenance-token-for-the-test"
	start := func(offset time.Duration) *instance {
		t.Helper()
		step++
		return startInstanceEnv(t, fmt.Sprintf("step%d", step), store, "SLUICE_DEV_CLOCK_OFFSET="+offset.String(),
			"SLUICE_ACCESS_KEYS=test:test", "SLUICE_MAINTENANCE_TOKEN="+token)
	}
	// at runs fn against a fresh process whose clock is offset ahead, then
	// stops that process.
	at := func(offset time.Duration, what string, fn func(c *sqs.Client)) {
		t.Helper()
		in := start(offset)
		t.Logf("step %d at +%s: %s", step, offset, what)
		fn(newClient(in.url, newHTTPClient()))
		in.stop(t)
	}
	// maintainCall runs a pass through a fresh process's maintenance path.
	maintainCall := func(offset time.Duration) {
		t.Helper()
		in := start(offset)
		req, err := http.NewRequest(http.MethodPost, in.url+"/_sluice/maintain", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := newHTTPClient().Do(req)
		if err != nil {
			t.Fatalf("POST /_sluice/maintain at +%s: %v", offset, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST /_sluice/maintain at +%s: %s", offset, resp.Status)
		}
		in.stop(t)
	}
	maintain := func(offset time.Duration) {
		t.Helper()
		cmd := exec.Command(sluiceBin, "maintain", "--store", store)
		cmd.Env = append(cmd.Environ(), "SLUICE_DEV_CLOCK_OFFSET="+offset.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sluice maintain at +%s: %v\n%s", offset, err, out)
		}
	}
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	url := func(c *sqs.Client, name string) *string {
		t.Helper()
		out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		must(err, "GetQueueUrl "+name)
		return out.QueueUrl
	}
	count := func(c *sqs.Client, name string) string {
		t.Helper()
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url(c, name),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
		must(err, "GetQueueAttributes "+name)
		return out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)]
	}
	receive := func(c *sqs.Client, name string) []types.Message {
		t.Helper()
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url(c, name), MaxNumberOfMessages: 10})
		must(err, "ReceiveMessage "+name)
		return out.Messages
	}

	var dlqArn, firstID string
	at(0, "create queues, send", func(c *sqs.Client) {
		dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq")})
		must(err, "CreateQueue dlq")
		attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		must(err, "GetQueueAttributes dlq")
		dlqArn = attrs.Attributes["QueueArn"]
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("src"), Attributes: map[string]string{
			"VisibilityTimeout": "30", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqArn)}})
		must(err, "CreateQueue src")
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("short"), Attributes: map[string]string{"MessageRetentionPeriod": "60"}})
		must(err, "CreateQueue short")
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("f.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
		must(err, "CreateQueue f.fifo")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "src"), MessageBody: aws.String("to be redriven")})
		must(err, "SendMessage src")
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "short"), MessageBody: aws.String("to expire")})
		must(err, "SendMessage short")
		out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "f.fifo"), MessageBody: aws.String("once"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("x")})
		must(err, "SendMessage f.fifo")
		firstID = *out.MessageId
	})
	at(30*time.Second, "receive without deleting; a resend inside the dedup window", func(c *sqs.Client) {
		if ms := receive(c, "src"); len(ms) != 1 {
			t.Fatalf("src: received %d messages, want 1", len(ms))
		}
		out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "f.fifo"), MessageBody: aws.String("once"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("x")})
		must(err, "SendMessage f.fifo again")
		if *out.MessageId != firstID {
			t.Errorf("a resend 30 s later in a new process got MessageId %s, want the original %s (deduplicated)", *out.MessageId, firstID)
		}
		if n := count(c, "short"); n != "1" {
			t.Errorf("short: %s messages before its retention ends, want 1", n)
		}
	})
	at(2*time.Minute, "the visibility timeout has passed: the next receive redrives", func(c *sqs.Client) {
		if ms := receive(c, "src"); len(ms) != 0 {
			t.Errorf("src: received %d messages, want none (the message was received once already: redriven)", len(ms))
		}
		if ms := receive(c, "dlq"); len(ms) != 1 || *ms[0].Body != "to be redriven" {
			t.Errorf("dlq: received %v, want the redriven message", ms)
		}
	})
	maintain(3 * time.Minute)
	at(3*time.Minute, "retention has removed the short-lived message", func(c *sqs.Client) {
		if n := count(c, "short"); n != "0" {
			t.Errorf("short: %s messages past its 60 s retention, want 0", n)
		}
	})
	at(7*time.Minute, "past the dedup window; start a move task", func(c *sqs.Client) {
		out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url(c, "f.fifo"), MessageBody: aws.String("once"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("x")})
		must(err, "SendMessage f.fifo after the window")
		if *out.MessageId == firstID {
			t.Errorf("a resend 7 min later was deduplicated; the 5-minute window should have passed")
		}
		_, err = c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
		must(err, "StartMessageMoveTask")
	})
	// The task moves only when a maintenance pass or a request steps it.
	maintainCall(7*time.Minute + 10*time.Second)
	at(7*time.Minute+20*time.Second, "the maintenance pass has moved the message back", func(c *sqs.Client) {
		// Received before ListMessageMoveTasks, which would step the task
		// in passing: only the maintenance pass can have moved it.
		if ms := receive(c, "src"); len(ms) != 1 || *ms[0].Body != "to be redriven" {
			t.Errorf("src: received %v, want the message the maintenance pass moved back", ms)
		}
		tasks, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)})
		must(err, "ListMessageMoveTasks")
		if len(tasks.Results) != 1 || aws.ToString(tasks.Results[0].Status) != "COMPLETED" || tasks.Results[0].ApproximateNumberOfMessagesMoved != 1 {
			t.Errorf("move task: %+v, want one COMPLETED that moved 1", tasks.Results)
		}
	})
}
