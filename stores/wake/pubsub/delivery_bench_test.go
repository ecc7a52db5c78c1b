package pswake

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/sluicehq/sluice/stores/wake"
)

// BenchmarkDelivery measures how long a wake-up takes from one instance to
// another through Pub/Sub, beside the floor of the same Pub/Sub (the
// library alone: publish, then a streaming pull's callback), in one run,
// so that what the transport adds shows apart from what the emulator or
// the service takes. It reports p50 and p99 in ms; one op is one
// publish-to-delivery.
//
//	eval "$(infra/scripts/pubsub.sh start)"
//	go test -run '^$' -bench Delivery -benchtime 200x ./stores/wake/pubsub/
func BenchmarkDelivery(b *testing.B) {
	emulator(b)
	b.Run("library", func(b *testing.B) {
		ctx := context.Background()
		c := admin(b)
		topic := "projects/" + project + "/topics/" + newTopic()
		sub := "projects/" + project + "/subscriptions/" + newTopic()
		if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic}); err != nil {
			b.Fatal(err)
		}
		got := make(chan struct{}, 1)
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s := c.Subscriber(sub)
		s.ReceiveSettings.NumGoroutines = 1
		go func() {
			_ = s.Receive(rctx, func(_ context.Context, m *pubsub.Message) { m.Ack(); got <- struct{}{} })
		}()
		pub := c.Publisher(topic)
		defer pub.Stop()
		pub.PublishSettings.CountThreshold = 1
		pub.PublishSettings.DelayThreshold = time.Millisecond
		measure(b, func() {
			if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte("x")}).Get(ctx); err != nil {
				b.Fatal(err)
			}
		}, func() { <-got })
	})
	b.Run("transport", func(b *testing.B) {
		topic := newTopic()
		from, _ := newHub(b, topic)
		to, _ := newHub(b, topic)
		var hint <-chan struct{}
		var cancel func()
		measure(b, func() {
			hint, cancel = to.Subscribe("q")
			from.Publish(context.Background(), wake.Event{Queue: "q", Count: 1})
		}, func() { <-hint; cancel() })
	})
}

// measure times send to arrive, b.N times after a warm-up, each alone (a
// pause between them, as wake-ups of a lightly loaded deployment come),
// and reports the percentiles.
func measure(b *testing.B, send, arrive func()) {
	b.Helper()
	for range 10 { // warm-up: streams and connections set up
		send()
		arrive()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		send()
		arrive()
		lat = append(lat, time.Since(start))
		b.StopTimer()
		time.Sleep(10 * time.Millisecond)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
