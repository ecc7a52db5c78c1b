package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

// A send that carries a waiting poll's claim runs to its end when its
// client leaves while a batch led by another call holds it (here a delete
// waiting on a row lock, as any slow batch would): the batch commits the
// message and the claim, and the poll gets the message. Were the send cut
// short, the combiner would answer it ctx.Err() while the batch still
// committed, and the message would stay in flight under a receipt nobody
// holds, beside the waiting poll, for its visibility timeout.
func TestSendWhoseClientLeavesStillAnswersItsHandOff(t *testing.T) {
	dsn, schema := newSchema(t)
	st := openSchema(t, dsn, schema)
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", RepairInterval: time.Hour, IdleMemo: -1})
	defer svc.Shutdown()
	ctx := context.Background()
	q, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "q"})
	if err != nil {
		t.Fatal(err)
	}
	url := q.QueueUrl
	send := func(ctx context.Context, body string) error {
		_, err := svc.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: url, MessageBody: &body})
		return err
	}
	// Two messages in flight, whose rows the test will lock.
	for _, b := range []string{"a", "b"} {
		if err := send(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	ten := int64(10)
	out, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: &ten})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	inFlight := out.Messages

	type result struct {
		msgs []contract.Message
		err  error
	}
	poll := make(chan result, 1)
	go func() {
		wait := int64(6)
		out, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: &wait})
		if err != nil {
			poll <- result{err: err}
			return
		}
		poll <- result{msgs: out.Messages}
	}()
	for deadline := time.Now().Add(10 * time.Second); svc.LongPollsWaiting() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the poll does not wait")
		}
	}

	lock := func(id string) pgx.Tx {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{schema, "messages"}.Sanitize()+" WHERE message_id = $1 FOR UPDATE", id); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	txA, txB := lock(inFlight[0].MessageId), lock(inFlight[1].MessageId)
	del := func(m contract.Message) {
		if _, err := svc.DeleteMessage(ctx, &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Error(err)
		}
	}
	go del(inFlight[0]) // batch 0, held by txA
	time.Sleep(200 * time.Millisecond)
	go del(inFlight[1]) // waits for the next batch, which it leads
	time.Sleep(100 * time.Millisecond)
	sendCtx, cancelSend := context.WithCancel(ctx)
	sent := make(chan error, 1)
	go func() { sent <- send(sendCtx, "m") }() // takes the poll; joins the delete's batch
	time.Sleep(200 * time.Millisecond)
	_ = txA.Rollback(ctx) // batch 0 ends; batch 1 (delete b + the send and its hand-off) runs, held by txB
	time.Sleep(200 * time.Millisecond)
	cancelSend() // the client gives up
	time.Sleep(100 * time.Millisecond)
	_ = txB.Rollback(ctx) // batch 1 commits
	t.Logf("send: %v", <-sent)

	r := <-poll
	attrs, err := svc.GetQueueAttributes(ctx, &contract.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("poll: %d messages, err %v; queue: visible %s, in flight %s", len(r.msgs), r.err,
		attrs.Attributes["ApproximateNumberOfMessages"], attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])
	if len(r.msgs) == 0 && attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] == "1" {
		t.Errorf("the send's message was stored and claimed in flight for the waiting poll, which never got it")
	}
	if len(r.msgs) == 0 && attrs.Attributes["ApproximateNumberOfMessages"] != "1" {
		t.Errorf("the poll got nothing and the message is not visible either")
	}
}
