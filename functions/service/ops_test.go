package service_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// MessageCounts counts messages, not requests: a batch's successful
// entries, each message a receive returns, each delete that applied.
func TestMessageCountsCountMessages(t *testing.T) {
	ctx := context.Background()
	svc := service.New(service.Config{Store: memstore.New()})
	url := create(t, svc, "counted")
	body := func(s string) *string { return &s }
	if _, err := svc.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: url, MessageBody: body("one")}); err != nil {
		t.Fatal(err)
	}
	out, err := svc.SendMessageBatch(ctx, &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
		{Id: "a", MessageBody: body("two")}, {Id: "b", MessageBody: body("three")}, {Id: "c", MessageBody: body("")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failed) != 1 {
		t.Fatalf("batch failed entries = %+v, want the empty body's", out.Failed)
	}
	msgs := receive(t, svc, url, 0)
	if len(msgs) != 3 {
		t.Fatalf("received %d, want 3", len(msgs))
	}
	if _, err := svc.DeleteMessage(ctx, &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeleteMessageBatch(ctx, &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
		{Id: "x", ReceiptHandle: msgs[1].ReceiptHandle}, {Id: "y", ReceiptHandle: "not-a-handle"}}}); err != nil {
		t.Fatal(err)
	}
	want := service.MessageCounts{Sent: 3, Received: 3, Deleted: 2}
	if got := svc.MessageCounts(); got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
}
