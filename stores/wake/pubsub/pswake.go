// Package pswake is a wake.Transport over Google Cloud Pub/Sub, for
// deployments whose instances scale to zero or come and go (Cloud Run,
// Cloud Functions), where holding a LISTEN connection to PostgreSQL per
// instance is a poor fit. Any store can use it.
//
// A deployment shares one topic (created when missing). Each instance
// receives through a subscription of its own, created when it starts, with
// the shortest expiration policy Pub/Sub allows (a day without a
// subscriber, then Pub/Sub deletes it: an instance that died without
// closing leaves nothing behind for long) and the shortest message
// retention (wake-ups older than that are worthless), and deleted when it
// closes. A publish is one message carrying a whole batch of the hub's
// events, since Pub/Sub bills at least 1,000 bytes per publish and per
// pull whatever the message's size.
//
// Every subscription gets every message, the publisher's own too (a filter
// would not make that cheaper: Pub/Sub bills filtered-out messages as
// delivered). The transport puts its own echo to use, as fslisten does: a
// publish whose echo does not arrive within EchoTimeout means the
// subscriber has gone deaf (the client library retries a broken stream
// silently), so the transport reports itself degraded, makes sure its
// subscription exists (recreating a deleted or expired one) and receives
// anew. Events published while the subscription was missing are lost; the
// hub wakes every waiter when the transport recovers.
package pswake

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// Defaults of Options.
const (
	DefaultTopic       = "sluice-wake"
	DefaultEchoTimeout = 10 * time.Second
)

// Pub/Sub's limits that the subscriptions use: the shortest expiration
// TTL (a day) and the shortest message retention (ten minutes).
const (
	subscriptionTTL = 24 * time.Hour
	retention       = 10 * time.Minute
	ackDeadline     = 10 * time.Second
)

// minBilled is what Pub/Sub bills a publish or pull request at least.
const minBilled = 1000

// maxEvents bounds the events of one message (queue names are at most 80
// characters, so a message stays below 100 KB); a larger batch goes out
// as several messages.
const maxEvents = 1000

// adminTimeout bounds each call that makes sure the topic and the
// subscription exist, so that an unreachable Pub/Sub shows as a degraded
// transport within a few seconds (and NewHub goes on).
const adminTimeout = 5 * time.Second

// stopWait bounds how long a cancelled Receive is waited for.
const stopWait = 2 * time.Second

// Attributes of a message: the publishing instance and its publish's
// sequence number, so that an instance knows its own echo.
const (
	attrFrom = "i"
	attrSeq  = "s"
)

// Options configure a Transport.
type Options struct {
	// Topic is the topic ID in the project (default DefaultTopic).
	// Instances that should wake each other use the same one.
	Topic string
	// EchoTimeout is how long a publish may wait for its own echo before
	// the subscriber is taken for deaf (default DefaultEchoTimeout).
	EchoTimeout time.Duration
	// ClientOptions go to the Pub/Sub client (credentials, endpoint...).
	// Without them: the emulator when PUBSUB_EMULATOR_HOST is set,
	// otherwise Application Default Credentials.
	ClientOptions []option.ClientOption
	Logger        *slog.Logger
}

// Transport is a wake.Transport on one Pub/Sub topic.
type Transport struct {
	client      *pubsub.Client
	pub         *pubsub.Publisher
	topic       string // projects/P/topics/T
	sub         string // projects/P/subscriptions/S, this instance's
	instance    string
	echoTimeout time.Duration
	log         *slog.Logger

	mu        sync.Mutex
	seq       int64
	listening bool                // the subscription exists and is being received
	echoes    map[int64]time.Time // own publishes whose echo has not arrived
	suspect   bool                // a publish could not reach Pub/Sub

	publishes, pulls, bytes atomic.Int64
}

var _ wake.Transport = (*Transport)(nil)

// Open returns a Transport on the project's topic. It makes no call yet:
// the topic and the subscription are made when it listens, and an
// unreachable Pub/Sub shows as a degraded transport.
func Open(ctx context.Context, project string, opts Options) (*Transport, error) {
	if project == "" {
		return nil, errors.New("pswake: a project is required")
	}
	if opts.Topic == "" {
		opts.Topic = DefaultTopic
	}
	if opts.EchoTimeout <= 0 {
		opts.EchoTimeout = DefaultEchoTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// gRPC waits up to two minutes between reconnects by default; wake-ups
	// should come back within seconds of Pub/Sub doing so.
	reconnect := option.WithGRPCDialOption(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
		MinConnectTimeout: 5 * time.Second,
	}))
	client, err := pubsub.NewClient(ctx, project, append([]option.ClientOption{reconnect}, opts.ClientOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("pswake: %w", err)
	}
	b := make([]byte, 8)
	_, _ = crand.Read(b)
	instance := hex.EncodeToString(b)
	t := &Transport{
		client:      client,
		topic:       "projects/" + project + "/topics/" + opts.Topic,
		sub:         "projects/" + project + "/subscriptions/" + subscriptionID(opts.Topic, instance),
		instance:    instance,
		echoTimeout: opts.EchoTimeout,
		log:         opts.Logger,
		echoes:      map[int64]time.Time{},
	}
	t.pub = client.Publisher(t.topic)
	// The hub already batches and never publishes concurrently: a
	// message goes out at once rather than after the library's delay.
	t.pub.PublishSettings.CountThreshold = 1
	t.pub.PublishSettings.DelayThreshold = time.Millisecond
	return t, nil
}

// subscriptionID names an instance's subscription after the topic, so that
// an operator sees whose it is (IDs are at most 255 characters).
func subscriptionID(topic, instance string) string {
	return topic[:min(len(topic), 200)] + "-" + instance
}

// Subscription is the full name of this instance's subscription.
func (t *Transport) Subscription() string { return t.sub }

// BilledOps is what Pub/Sub billed this transport since it opened, by its
// pricing rules: Writes counts publish requests, Reads pull deliveries
// (each message received counted as its own pull response, which is what
// a lightly loaded subscription gets and an upper bound otherwise), and
// Bytes the throughput of both, each request at least 1,000 bytes. Admin
// calls (creating and deleting the subscription) and acks are not billed.
func (t *Transport) BilledOps() stores.BilledOps {
	return stores.BilledOps{Reads: t.pulls.Load(), Writes: t.publishes.Load(), Bytes: t.bytes.Load()}
}

// billedSize is what Pub/Sub counts of a message: its data and attributes,
// and the publish timestamp (20 bytes); at least minBilled per request.
func billedSize(m *pubsub.Message) int64 {
	n := len(m.Data) + 20
	for k, v := range m.Attributes {
		n += len(k) + len(v)
	}
	return int64(max(n, minBilled))
}

// Publish sends the events as one message per maxEvents, and returns once
// Pub/Sub acknowledged them.
func (t *Transport) Publish(ctx context.Context, events []wake.Event) error {
	for len(events) > 0 {
		n := min(len(events), maxEvents)
		if err := t.publish(ctx, events[:n]); err != nil {
			return err
		}
		events = events[n:]
	}
	return nil
}

func (t *Transport) publish(ctx context.Context, events []wake.Event) error {
	data := encode(events)
	if len(data) == 0 {
		return nil
	}
	t.mu.Lock()
	t.seq++
	seq := t.seq
	// Expected before the publish: the echo may arrive before Get returns.
	if t.listening {
		t.echoes[seq] = time.Now()
	}
	t.mu.Unlock()
	m := &pubsub.Message{Data: data, Attributes: map[string]string{attrFrom: t.instance, attrSeq: strconv.FormatInt(seq, 10)}}
	_, err := t.pub.Publish(ctx, m).Get(ctx)
	if err != nil {
		t.mu.Lock()
		delete(t.echoes, seq)
		switch c := status.Code(err); {
		case c == codes.Unavailable || c == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
			// Pub/Sub cannot be reached: the subscriber most likely
			// cannot either, and its client would retry without a word.
			t.suspect = t.listening
		case c == codes.NotFound:
			// The topic is gone: nobody hears anything until it is made
			// again, and this instance's subscription with it (ensure).
			t.suspect = t.listening
		}
		t.mu.Unlock()
		return fmt.Errorf("pswake: publish: %w", err)
	}
	t.publishes.Add(1)
	t.bytes.Add(billedSize(m))
	return nil
}

// encode writes one "queue count" line per event (names hold no spaces).
func encode(events []wake.Event) []byte {
	var b strings.Builder
	for _, ev := range events {
		if ev.Queue == "" || strings.ContainsAny(ev.Queue, " \n") {
			continue
		}
		b.WriteString(ev.Queue)
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(max(ev.Count, 0)))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// decode reads what encode wrote, skipping lines it cannot read (a stray
// message costs nothing but its lines).
func decode(data []byte) []wake.Event {
	var out []wake.Event
	for line := range strings.SplitSeq(string(data), "\n") {
		q, n, ok := strings.Cut(line, " ")
		if !ok || q == "" {
			continue
		}
		count, err := strconv.Atoi(n)
		if err != nil || count < 0 {
			continue
		}
		out = append(out, wake.Event{Queue: q, Count: count})
	}
	return out
}

// errDeaf: a publish's echo did not arrive in time, or a publish found
// Pub/Sub unreachable.
var errDeaf = errors.New("pswake: own publish not heard back; receiving anew")

// Listen makes sure the subscription exists and receives from it, again
// and again: when receiving fails or goes deaf the transport reports
// itself degraded and starts over, with backoff, reporting itself healthy
// once the subscription exists again (after which the hub wakes every
// waiter once).
func (t *Transport) Listen(ctx context.Context, r wake.Receiver) error {
	backoff := 100 * time.Millisecond
	for {
		heard, err := t.listenOnce(ctx, r)
		if ctx.Err() != nil {
			return nil
		}
		if heard {
			backoff = 100 * time.Millisecond
		}
		r.Degraded(true)
		t.log.Warn("pswake: subscriber lost; starting over", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenOnce makes sure the topic and the subscription exist, then
// receives until that fails, goes deaf or ctx ends; heard says whether it
// got as far as receiving.
func (t *Transport) listenOnce(ctx context.Context, r wake.Receiver) (heard bool, err error) {
	if err := t.ensure(ctx); err != nil {
		return false, err
	}
	t.mu.Lock()
	t.listening, t.suspect = true, false
	clear(t.echoes)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.listening = false
		t.mu.Unlock()
	}()
	// From here on, messages are kept for the subscription whether or not
	// the stream is up yet: nothing published now is lost.
	r.Degraded(false)

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := t.client.Subscriber(t.sub)
	s.ReceiveSettings.NumGoroutines = 1
	s.ReceiveSettings.MaxOutstandingMessages = 100
	done := make(chan error, 1)
	go func() {
		err := s.Receive(lctx, func(_ context.Context, m *pubsub.Message) {
			m.Ack()
			t.receive(m, r)
		})
		if err == nil && lctx.Err() == nil {
			err = errors.New("pswake: receiving stopped")
		}
		done <- err
	}()
	// Receive, once cancelled, waits for its acks to go out, which takes
	// as long as the library's retries while Pub/Sub is unreachable: the
	// transport waits a little, then leaves it to finish by itself (a late
	// delivery is a hint like any other).
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(stopWait):
		}
	}
	tick := time.NewTicker(max(t.echoTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return true, err
		case <-ctx.Done():
			stop()
			return true, ctx.Err()
		case <-tick.C:
			if t.deaf() {
				stop()
				return true, errDeaf
			}
		}
	}
}

// receive counts a message, confirms an own echo, delivers another's.
func (t *Transport) receive(m *pubsub.Message, r wake.Receiver) {
	t.pulls.Add(1)
	t.bytes.Add(billedSize(m))
	if m.Attributes[attrFrom] == t.instance {
		seq, _ := strconv.ParseInt(m.Attributes[attrSeq], 10, 64)
		t.mu.Lock()
		for s := range t.echoes {
			if s <= seq {
				delete(t.echoes, s)
			}
		}
		t.mu.Unlock()
		return
	}
	if events := decode(m.Data); len(events) > 0 {
		r.Deliver(events)
	}
}

// deaf reports (once) whether an own publish has waited past EchoTimeout,
// or one could not reach Pub/Sub.
func (t *Transport) deaf() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.suspect {
		t.suspect = false
		clear(t.echoes)
		return true
	}
	for _, sent := range t.echoes {
		if time.Since(sent) > t.echoTimeout {
			clear(t.echoes)
			return true
		}
	}
	return false
}

// ensure creates the subscription, and the topic first when it is
// missing. One that exists already (this instance's, from before) is fine
// while it is attached to the topic; a topic deleted since leaves it
// attached to none, hearing nothing even once the topic is made again, so
// it is made anew.
func (t *Transport) ensure(ctx context.Context) error {
	err := t.createSubscription(ctx)
	if status.Code(err) == codes.AlreadyExists {
		cctx, cancel := context.WithTimeout(ctx, adminTimeout)
		sub, gerr := t.client.SubscriptionAdminClient.GetSubscription(cctx, &pubsubpb.GetSubscriptionRequest{Subscription: t.sub})
		cancel()
		if gerr != nil || sub.GetTopic() == t.topic {
			return nil // attached (or unknown: the listen that follows tells)
		}
		cctx, cancel = context.WithTimeout(ctx, adminTimeout)
		derr := t.client.SubscriptionAdminClient.DeleteSubscription(cctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: t.sub})
		cancel()
		if derr != nil && status.Code(derr) != codes.NotFound {
			return fmt.Errorf("pswake: delete detached subscription %s: %w", t.sub, derr)
		}
		err = t.createSubscription(ctx)
	}
	if status.Code(err) == codes.NotFound {
		// The topic is missing: the deployment's first instance makes it.
		cctx, cancel := context.WithTimeout(ctx, adminTimeout)
		_, terr := t.client.TopicAdminClient.CreateTopic(cctx, &pubsubpb.Topic{Name: t.topic})
		cancel()
		if terr != nil && status.Code(terr) != codes.AlreadyExists {
			return fmt.Errorf("pswake: create topic %s: %w", t.topic, terr)
		}
		err = t.createSubscription(ctx)
	}
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("pswake: create subscription %s: %w", t.sub, err)
	}
	return nil
}

func (t *Transport) createSubscription(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	_, err := t.client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name:                     t.sub,
		Topic:                    t.topic,
		AckDeadlineSeconds:       int32(ackDeadline / time.Second),
		MessageRetentionDuration: durationpb.New(retention),
		ExpirationPolicy:         &pubsubpb.ExpirationPolicy{Ttl: durationpb.New(subscriptionTTL)},
	})
	return err
}

// closeWait bounds Close: after an outage the library's stop can wait on
// streams and flushes that never end, and a stopping process must not
// hang on them.
const closeWait = 5 * time.Second

// Close deletes the subscription (after Listen returned) and closes the
// client, or gives up after closeWait and leaves that to finish by itself.
// A subscription that cannot be deleted now expires by itself.
func (t *Transport) Close() error {
	done := make(chan error, 1)
	go func() { done <- t.close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeWait):
		return fmt.Errorf("pswake: closing took over %s; left to finish by itself", closeWait)
	}
}

func (t *Transport) close() error {
	t.pub.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	err := t.client.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: t.sub})
	if status.Code(err) == codes.NotFound {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("pswake: delete subscription %s: %w", t.sub, err)
	}
	return errors.Join(err, t.client.Close())
}
