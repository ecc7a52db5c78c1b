package service_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// Several accounts and regions share one deployment: each caller sees only
// its own queues, under its own account and region, and one caller's URLs
// and ARNs reach nothing of another's.
func TestCallersReachOnlyTheirOwnQueues(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", AccountID: "000000000000", Region: "us-east-1"})
	defer svc.Shutdown()
	home := context.Background()
	other := service.WithCaller(home, service.Caller{AccountID: "111111111111", Region: "us-east-1"})
	elsewhere := service.WithCaller(home, service.Caller{AccountID: "000000000000", Region: "eu-west-1"})
	ten := int64(10)

	urls := map[string]string{}
	for name, ctx := range map[string]context.Context{"home": home, "other": other, "elsewhere": elsewhere} {
		out, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "jobs"})
		if err != nil {
			t.Fatalf("%s: CreateQueue: %v", name, err)
		}
		urls[name] = out.QueueUrl
		body := "for " + name
		if _, err := svc.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: &body}); err != nil {
			t.Fatalf("%s: SendMessage: %v", name, err)
		}
	}
	if urls["home"] != "http://h/000000000000/jobs" || urls["other"] != "http://h/111111111111/jobs" || urls["elsewhere"] != urls["home"] {
		t.Errorf("queue URLs = %v", urls)
	}
	for name, ctx := range map[string]context.Context{"home": home, "other": other, "elsewhere": elsewhere} {
		got, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: urls[name], MaxNumberOfMessages: &ten,
			MessageSystemAttributeNames: []string{"SenderId"}})
		if err != nil {
			t.Fatalf("%s: ReceiveMessage: %v", name, err)
		}
		if len(got.Messages) != 1 || got.Messages[0].Body != "for "+name {
			t.Errorf("%s received %+v, want only its own message", name, got.Messages)
		} else if sender := got.Messages[0].Attributes["SenderId"]; sender != service.CallerOf(svc, ctx).AccountID {
			t.Errorf("%s: SenderId = %s", name, sender)
		}
		list, err := svc.ListQueues(ctx, &contract.ListQueuesInput{})
		if err != nil || !slices.Equal(list.QueueUrls, []string{urls[name]}) {
			t.Errorf("%s: ListQueues = %v, %v; want only %s", name, list, err, urls[name])
		}
		attrs, err := svc.GetQueueAttributes(ctx, &contract.GetQueueAttributesInput{QueueUrl: urls[name], AttributeNames: []string{"QueueArn"}})
		c := service.CallerOf(svc, ctx)
		if want := "arn:aws:sqs:" + c.Region + ":" + c.AccountID + ":jobs"; err != nil || attrs.Attributes["QueueArn"] != want {
			t.Errorf("%s: QueueArn = %v, %v; want %s", name, attrs, err, want)
		}
	}

	// Another account's URL and ARN name nothing of the caller's.
	body := "x"
	if _, err := svc.SendMessage(other, &contract.SendMessageInput{QueueUrl: urls["home"], MessageBody: &body}); !isCode(err, "AWS.SimpleQueueService.NonExistentQueue") {
		t.Errorf("a send to another account's URL: %v, want NonExistentQueue", err)
	}
	dlq, err := svc.CreateQueue(home, &contract.CreateQueueInput{QueueName: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	_ = dlq
	policy := `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":1}`
	_, err = svc.SetQueueAttributes(other, &contract.SetQueueAttributesInput{QueueUrl: urls["other"],
		Attributes: map[string]string{"RedrivePolicy": policy}})
	if err == nil || !strings.Contains(err.Error(), "Dead letter target does not exist") {
		t.Errorf("a redrive policy naming another account's queue: %v, want the target not to exist", err)
	}
	if _, err := svc.GetQueueUrl(other, &contract.GetQueueUrlInput{QueueName: "dlq"}); !isCode(err, "AWS.SimpleQueueService.NonExistentQueue") {
		t.Errorf("GetQueueUrl of another account's queue name: %v, want NonExistentQueue", err)
	}
}

func isCode(err error, code string) bool {
	ce, ok := err.(*contract.Error)
	return ok && ce.Code == code
}

// Dead-letter queues and move tasks work within another account as in the
// configured one, and name that account's queues.
func TestAnotherAccountsDeadLetterQueue(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	svc := service.New(service.Config{Store: st, BaseURL: "http://h"})
	defer svc.Shutdown()
	ctx := service.WithCaller(context.Background(), service.Caller{AccountID: "222222222222", Region: "eu-west-1"})
	arn := func(name string) string { return "arn:aws:sqs:eu-west-1:222222222222:" + name }
	dlq, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "src", Attributes: map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arn("dlq") + `","maxReceiveCount":1}`, "VisibilityTimeout": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	body := "poison"
	if _, err := svc.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: src.QueueUrl, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // received once, then moved
		if _, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: src.QueueUrl}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: dlq.QueueUrl,
		MessageSystemAttributeNames: []string{"DeadLetterQueueSourceArn"}, VisibilityTimeout: new(int64)})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Attributes["DeadLetterQueueSourceArn"] != arn("src") {
		t.Fatalf("dead-letter queue gave %+v, %v; want the message from %s", got, err, arn("src"))
	}
	srcs, err := svc.ListDeadLetterSourceQueues(ctx, &contract.ListDeadLetterSourceQueuesInput{QueueUrl: dlq.QueueUrl})
	if err != nil || !slices.Equal(srcs.QueueUrls, []string{src.QueueUrl}) {
		t.Errorf("ListDeadLetterSourceQueues = %v, %v", srcs, err)
	}
	dest, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "dest"})
	if err != nil {
		t.Fatal(err)
	}
	destArn := arn("dest")
	if _, err := svc.StartMessageMoveTask(ctx, &contract.StartMessageMoveTaskInput{SourceArn: arn("dlq"), DestinationArn: &destArn}); err != nil {
		t.Fatal(err)
	}
	var moved []contract.Message
	for range 50 { // move tasks run on their own, with no caller: the task names its account
		if err := svc.RunMoveTasks(context.Background()); err != nil {
			t.Fatal(err)
		}
		out, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: dest.QueueUrl})
		if err != nil {
			t.Fatal(err)
		}
		if moved = out.Messages; len(moved) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(moved) != 1 || moved[0].Body != "poison" {
		t.Errorf("the move task delivered %+v to %s", moved, destArn)
	}
}

// A name from a request that no queue could have (a colon in it) reaches
// nothing, so the configured account cannot spell another account's key;
// and a move task handle reaches only its own account's task.
func TestAnotherAccountsKeyCannotBeSpelled(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	svc := service.New(service.Config{Store: st, BaseURL: "http://h"})
	defer svc.Shutdown()
	home := context.Background()
	other := service.WithCaller(home, service.Caller{AccountID: "111111111111", Region: "us-east-1"})
	if _, err := svc.CreateQueue(other, &contract.CreateQueueInput{QueueName: "secret"}); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"http://h/000000000000/111111111111:us-east-1:secret", "http://h/000000000000/111111111111%3Aus-east-1%3Asecret"} {
		if _, err := svc.ReceiveMessage(home, &contract.ReceiveMessageInput{QueueUrl: url}); !isCode(err, "AWS.SimpleQueueService.NonExistentQueue") {
			t.Errorf("ReceiveMessage on %s: %v, want NonExistentQueue", url, err)
		}
	}
	if _, err := svc.GetQueueUrl(home, &contract.GetQueueUrlInput{QueueName: "111111111111:us-east-1:secret"}); !isCode(err, "AWS.SimpleQueueService.NonExistentQueue") {
		t.Errorf("GetQueueUrl of another account's key: %v, want NonExistentQueue", err)
	}

	arn := func(n string) string { return "arn:aws:sqs:us-east-1:111111111111:" + n }
	if _, err := svc.CreateQueue(other, &contract.CreateQueueInput{QueueName: "dlq"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetQueueAttributes(other, &contract.SetQueueAttributesInput{QueueUrl: "http://h/111111111111/secret",
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arn("dlq") + `","maxReceiveCount":1}`}}); err != nil {
		t.Fatal(err)
	}
	task, err := svc.StartMessageMoveTask(other, &contract.StartMessageMoveTaskInput{SourceArn: arn("dlq")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CancelMessageMoveTask(home, &contract.CancelMessageMoveTaskInput{TaskHandle: task.TaskHandle}); !isCode(err, "ResourceNotFoundException") {
		t.Errorf("cancelling another account's task: %v, want ResourceNotFoundException", err)
	}
	if _, err := svc.CancelMessageMoveTask(other, &contract.CancelMessageMoveTaskInput{TaskHandle: task.TaskHandle}); err != nil {
		t.Errorf("cancelling one's own task: %v", err)
	}
}

// An error that names a queue names it as its caller knows it, whichever
// account it belongs to.
func TestErrorsNameTheCallersQueue(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", AccountID: "000000000000", Region: "us-east-1"})
	defer svc.Shutdown()
	for _, ctx := range []context.Context{
		context.Background(),
		service.WithCaller(context.Background(), service.Caller{AccountID: "111111111111", Region: "eu-west-1"}),
	} {
		out, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "jobs"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.PurgeQueue(ctx, &contract.PurgeQueueInput{QueueUrl: out.QueueUrl}); err != nil {
			t.Fatal(err)
		}
		_, err = svc.PurgeQueue(ctx, &contract.PurgeQueueInput{QueueUrl: out.QueueUrl})
		if want := contract.ErrPurgeQueueInProgress("jobs"); err == nil || err.Error() != want.Error() {
			t.Errorf("%s: a second purge: %v, want %v", service.CallerOf(svc, ctx).AccountID, err, want)
		}
	}
}
