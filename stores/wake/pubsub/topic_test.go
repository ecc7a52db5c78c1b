package pswake

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/sluicehq/sluice/stores/wake"
)

// A topic deleted under running instances is noticed (publishes fail with
// NotFound) and made again, with the subscriptions attached to it; a topic
// an operator deleted and made again leaves the subscriptions attached to
// none, which are made anew once their echoes stop. Either way the
// instances hear each other again.
func TestTopicDeletedUnderRunningInstances(t *testing.T) {
	for _, recreated := range []bool{false, true} {
		emulator(t)
		topic := newTopic()
		ta, tb := open(t, topic), open(t, topic)
		ra := listen(t, ta)
		listen(t, tb)
		c := admin(t)
		ctx := context.Background()
		if err := c.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: ta.topic}); err != nil {
			t.Fatal(err)
		}
		if recreated {
			if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: ta.topic}); err != nil {
				t.Fatal(err)
			}
		}
		var lastErr error
		deadline := time.Now().Add(40 * time.Second)
		for !ra.heard("after") {
			if time.Now().After(deadline) {
				t.Fatalf("recreated %v: a did not hear b within 40 s of the topic's deletion (b's last publish: %v); a's reports: %v",
					recreated, lastErr, ra.reports())
			}
			lastErr = tb.Publish(ctx, []wake.Event{{Queue: "after", Count: 1}})
			_ = ta.Publish(ctx, []wake.Event{{Queue: "ping", Count: 1}})
			time.Sleep(200 * time.Millisecond)
		}
	}
}
