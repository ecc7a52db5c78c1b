package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
	"github.com/sluicehq/sluice/stores/wake"
)

// sendRequest is one message to send, from SendMessage or a batch entry.
type sendRequest struct {
	Body             *string
	DelaySeconds     *int64
	Attributes       map[string]contract.MessageAttributeValue
	SystemAttributes map[string]contract.MessageAttributeValue
	DedupID          *string
	GroupID          *string
}

// prepareMessage validates one message against its queue and builds what the
// store keeps. FIFO requirement errors are returned separately (fifoErr)
// because batches report them for the whole request.
func (s *Service) prepareMessage(ctx context.Context, cfg contract.QueueConfig, r sendRequest) (msg stores.NewMessage, size int, err error) {
	if r.Body == nil || *r.Body == "" {
		return msg, 0, contract.ErrMissingParameter("MessageBody")
	}
	body := *r.Body
	if !contract.ValidBody(body) {
		return msg, 0, contract.ErrInvalidMessageContents()
	}
	userSize, e := contract.ValidateMessageAttributes(r.Attributes, false)
	if e != nil {
		return msg, 0, e
	}
	if _, e := contract.ValidateMessageAttributes(r.SystemAttributes, true); e != nil {
		return msg, 0, e
	}
	size = len(body) + userSize
	if size > cfg.MaxMessageSize {
		return msg, size, contract.ErrInvalidParameterValue(fmt.Sprintf("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", cfg.MaxMessageSize))
	}
	delay := cfg.DelaySeconds
	if r.DelaySeconds != nil {
		d := *r.DelaySeconds
		if d < 0 || d > contract.MaxDelaySeconds {
			return msg, size, contract.ErrInvalidValue(d, "DelaySeconds", "DelaySeconds must be >= 0 and <= 900.")
		}
		if cfg.FIFO && d != 0 {
			return msg, size, contract.ErrInvalidValue(d, "DelaySeconds", "The request include parameter that is not valid for this queue type.")
		}
		if !cfg.FIFO {
			delay = int(d)
		}
	}
	if r.GroupID != nil && !contract.ValidGroupOrDedupID(*r.GroupID) {
		return msg, size, contract.ErrInvalidGroupID(*r.GroupID)
	}
	if r.DedupID != nil && !contract.ValidGroupOrDedupID(*r.DedupID) {
		return msg, size, contract.ErrInvalidDedupID(*r.DedupID)
	}
	msg = stores.NewMessage{
		ID:                     newMessageID(),
		Body:                   body,
		Attributes:             toStored(r.Attributes),
		SystemAttributes:       toStored(r.SystemAttributes),
		MD5OfBody:              contract.MD5OfBody(body),
		MD5OfMessageAttributes: contract.MD5OfAttributes(r.Attributes),
		MD5OfSystemAttributes:  contract.MD5OfAttributes(r.SystemAttributes),
		SenderID:               s.caller(ctx).AccountID,
		Delay:                  time.Duration(delay) * time.Second,
	}
	if h := traceHeader(ctx); h != "" && contract.ValidBody(h) {
		if _, own := r.SystemAttributes[contract.MsgAttrAWSTraceHeader]; !own {
			// Stored and returned like the attribute, but not in
			// MD5OfMessageSystemAttributes: that digests what the client
			// sent as attributes (LocalStack's AWS-validated
			// test_aws_trace_header_propagation).
			if msg.SystemAttributes == nil {
				msg.SystemAttributes = map[string]stores.Attribute{}
			}
			msg.SystemAttributes[contract.MsgAttrAWSTraceHeader] = stores.Attribute{DataType: "String", StringValue: &h}
		}
	}
	if r.GroupID != nil {
		msg.GroupID = *r.GroupID
	}
	if cfg.FIFO {
		if r.DedupID != nil {
			msg.DedupID = *r.DedupID
		} else if cfg.ContentBasedDedup {
			msg.DedupID = contract.ContentDeduplicationID(body)
		}
		if cfg.DedupPerGroup {
			msg.DedupScope = msg.GroupID
		}
	} else if r.DedupID != nil {
		return msg, size, contract.ErrInvalidValue(*r.DedupID, "MessageDeduplicationId", "The request include parameter that is not valid for this queue type.")
	}
	return msg, size, nil
}

// fifoRequirements checks what a FIFO queue demands of every message.
func fifoRequirements(cfg contract.QueueConfig, r sendRequest, missingGroup func() *contract.Error) error {
	if !cfg.FIFO {
		return nil
	}
	if r.GroupID == nil {
		return missingGroup()
	}
	if r.DedupID == nil && !cfg.ContentBasedDedup {
		return contract.ErrInvalidParameterValue("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	}
	return nil
}

func (s *Service) SendMessage(ctx context.Context, in *contract.SendMessageInput) (*contract.SendMessageOutput, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	cfg := contract.ParseQueueConfig(q.Attributes)
	r := sendRequest{Body: in.MessageBody, DelaySeconds: in.DelaySeconds, Attributes: in.MessageAttributes,
		SystemAttributes: in.MessageSystemAttributes, DedupID: in.MessageDeduplicationId, GroupID: in.MessageGroupId}
	msg, _, err := s.prepareMessage(ctx, cfg, r)
	if err != nil {
		return nil, err
	}
	if err := fifoRequirements(cfg, r, func() *contract.Error { return contract.ErrMissingParameter("MessageGroupId") }); err != nil {
		return nil, err
	}
	res, err := s.send(ctx, q, []stores.NewMessage{msg})
	if err != nil {
		return nil, err
	}
	s.counts.sent.Add(1)
	sr := res.Results[0]
	return &contract.SendMessageOutput{
		MD5OfMessageBody:             msg.MD5OfBody,
		MD5OfMessageAttributes:       msg.MD5OfMessageAttributes,
		MD5OfMessageSystemAttributes: msg.MD5OfSystemAttributes,
		MessageId:                    sr.MessageID,
		SequenceNumber:               sr.SequenceNumber,
	}, nil
}

// send stores msgs in q, with the claim of a poll waiting on q when the
// store runs it (handOffFor), and wakes polls for what the send made
// receivable and no poll took.
func (s *Service) send(ctx context.Context, q *stores.Queue, msgs []stores.NewMessage) (res *stores.MessageSendResult, err error) {
	params := &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: msgs, DedupWindow: contract.DedupWindow, Now: s.now()}
	storeCtx := ctx
	pp := s.handOffFor(q, msgs, params)
	if pp != nil {
		// The poll gets an answer whatever becomes of this call (a panic
		// too), and one that says what the store did: a send whose client
		// left may still commit, and with it the poll's claim.
		answered := false
		defer func() {
			if !answered {
				s.handOffs.answer(pp, nil)
			}
		}()
		var cancel context.CancelFunc
		storeCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), handOffSendTimeout)
		defer cancel()
		res, err = s.store.MessageSend(storeCtx, params)
		answered = true
		handed := s.answerHandOff(ctx, q, pp, params, res, err)
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		s.wakeAfterSend(ctx, q, res, handed)
		return res, nil
	}
	res, err = s.store.MessageSend(storeCtx, params)
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	s.wakeAfterSend(ctx, q, res, 0)
	return res, nil
}

// checkBatch applies the request-level rules every batch action shares.
func checkBatch(entryType string, ids []string) error {
	if len(ids) == 0 {
		return contract.ErrEmptyBatchRequest(entryType)
	}
	if len(ids) > contract.MaxBatchEntries {
		return contract.ErrTooManyEntriesInBatchRequest(len(ids))
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !contract.ValidBatchEntryID(id) {
			return contract.ErrInvalidBatchEntryId()
		}
		if seen[id] {
			return contract.ErrBatchEntryIdsNotDistinct(id)
		}
		seen[id] = true
	}
	return nil
}

func entryError(id string, err error) contract.BatchResultErrorEntry {
	var ce *contract.Error
	if !errors.As(err, &ce) {
		ce = contract.ErrInternal()
	}
	return contract.BatchResultErrorEntry{Id: id, SenderFault: ce.Sender, Code: ce.Code, Message: ce.Message}
}

func (s *Service) SendMessageBatch(ctx context.Context, in *contract.SendMessageBatchInput) (*contract.SendMessageBatchOutput, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	if err := checkBatch("SendMessageBatchRequestEntry", ids); err != nil {
		return nil, err
	}
	cfg := contract.ParseQueueConfig(q.Attributes)
	out := &contract.SendMessageBatchOutput{Successful: []contract.SendMessageBatchResultEntry{}, Failed: []contract.BatchResultErrorEntry{}}
	var msgs []stores.NewMessage
	var okIDs []string
	total := 0
	for _, e := range in.Entries {
		r := sendRequest{Body: e.MessageBody, DelaySeconds: e.DelaySeconds, Attributes: e.MessageAttributes,
			SystemAttributes: e.MessageSystemAttributes, DedupID: e.MessageDeduplicationId, GroupID: e.MessageGroupId}
		if e.MessageBody != nil {
			n, _ := contract.ValidateMessageAttributes(e.MessageAttributes, false)
			total += len(*e.MessageBody) + n
		}
		if err := fifoRequirements(cfg, r, func() *contract.Error {
			return contract.ErrInvalidParameterValue("The request must contain the parameter MessageGroupId.")
		}); err != nil {
			return nil, err
		}
		msg, size, err := s.prepareMessage(ctx, cfg, r)
		if err != nil {
			if size > cfg.MaxMessageSize { // batches word this one differently
				err = contract.ErrInvalidParameterValue(fmt.Sprintf("One or more parameters cannot be validated. Reason: Message must be shorter than %d bytes.", cfg.MaxMessageSize))
			}
			out.Failed = append(out.Failed, entryError(e.Id, err))
			continue
		}
		msgs = append(msgs, msg)
		okIDs = append(okIDs, e.Id)
	}
	if total > contract.MaxMessageSizeLimit {
		return nil, contract.ErrBatchRequestTooLong(total)
	}
	if len(msgs) == 0 {
		return out, nil
	}
	res, err := s.send(ctx, q, msgs)
	if err != nil {
		return nil, err
	}
	s.counts.sent.Add(uint64(len(res.Results)))
	for i, sr := range res.Results {
		out.Successful = append(out.Successful, contract.SendMessageBatchResultEntry{
			Id: okIDs[i], MessageId: sr.MessageID, SequenceNumber: sr.SequenceNumber,
			MD5OfMessageBody: msgs[i].MD5OfBody, MD5OfMessageAttributes: msgs[i].MD5OfMessageAttributes,
			MD5OfMessageSystemAttributes: msgs[i].MD5OfSystemAttributes,
		})
	}
	return out, nil
}

func (s *Service) ReceiveMessage(ctx context.Context, in *contract.ReceiveMessageInput) (*contract.ReceiveMessageOutput, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	cfg := contract.ParseQueueConfig(q.Attributes)
	max := 1
	if in.MaxNumberOfMessages != nil {
		if *in.MaxNumberOfMessages < 1 || *in.MaxNumberOfMessages > contract.MaxReceiveMessages {
			return nil, contract.ErrInvalidValue(*in.MaxNumberOfMessages, "MaxNumberOfMessages", "Must be between 1 and 10, if provided.")
		}
		max = int(*in.MaxNumberOfMessages)
	}
	wait := cfg.WaitTimeSeconds
	if in.WaitTimeSeconds != nil {
		if *in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > contract.MaxWaitTimeSeconds {
			return nil, contract.ErrInvalidValue(*in.WaitTimeSeconds, "WaitTimeSeconds", "Must be >= 0 and <= 20, if provided.")
		}
		wait = int(*in.WaitTimeSeconds)
	}
	visibility := cfg.VisibilityTimeout
	if in.VisibilityTimeout != nil {
		if *in.VisibilityTimeout < 0 || *in.VisibilityTimeout > contract.MaxVisibilityTimeout {
			return nil, contract.ErrInvalidValue(*in.VisibilityTimeout, "VisibilityTimeout", "Must be >= 0 and <= 43200, if provided.")
		}
		visibility = int(*in.VisibilityTimeout)
	}
	attempt := ""
	if in.ReceiveRequestAttemptId != nil {
		if !contract.ValidGroupOrDedupID(*in.ReceiveRequestAttemptId) {
			return nil, contract.ErrInvalidValue(*in.ReceiveRequestAttemptId, "ReceiveRequestAttemptId", "ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
		}
		if cfg.FIFO {
			attempt = *in.ReceiveRequestAttemptId
		}
	}
	for _, n := range append(append([]string{}, in.AttributeNames...), in.MessageSystemAttributeNames...) {
		if !isMessageSystemAttributeName(n) {
			return nil, contract.ErrInvalidAttributeName("Unknown Attribute " + n + ".")
		}
	}
	p := &stores.MessageClaimParams{
		QueueName: q.Name, QueueID: q.ID, Max: max,
		VisibilityTimeout: time.Duration(visibility) * time.Second,
		AttemptID:         attempt, AttemptWindow: contract.ReceiveAttemptWindow,
	}
	if cfg.Redrive != nil {
		if dlq, ok := s.arnStoreName(ctx, cfg.Redrive.DeadLetterTargetArn); ok {
			p.Redrive = &stores.Redrive{MaxReceiveCount: cfg.Redrive.MaxReceiveCount, QueueName: dlq}
		}
	}
	waitFor := time.Duration(wait) * time.Second
	if s.cfg.MaxWait > 0 {
		waitFor = min(waitFor, s.cfg.MaxWait)
	}
	claimed, err := s.claimWaiting(ctx, p, waitFor)
	if err != nil {
		return nil, err
	}
	s.counts.received.Add(uint64(len(claimed)))
	out := &contract.ReceiveMessageOutput{}
	sel := newAttributeSelection(in.AttributeNames, in.MessageSystemAttributeNames, in.MessageAttributeNames)
	for _, m := range claimed {
		out.Messages = append(out.Messages, s.renderMessage(q, m, sel))
	}
	return out, nil
}

// claimWaiting claims once, and for a long poll waits for a wake-up (a
// send, a release, ...), the next known visibility change, or a periodic
// repair check, until wait has passed.
func (s *Service) claimWaiting(ctx context.Context, p *stores.MessageClaimParams, wait time.Duration) ([]stores.ClaimedMessage, error) {
	deadline := time.Now().Add(wait)
	look := lookFirst
	lp := longPollWatch{s: s}
	defer lp.done()
	var next time.Time // the NextChange of its last claim that got nothing
	defer func() { s.handOnNextChange(p.QueueName, next) }()
	for {
		// Subscribed before the claim, so that a send between the two
		// still wakes this poll; a short poll never waits, so it needs no
		// subscription (and spares the hub's lock).
		var l *wake.Listener
		var hint <-chan struct{}
		listen := func() {
			l = s.hub.Listen(p.QueueName)
			hint = l.C
		}
		cancel := func() {
			if l != nil {
				l.Cancel()
			}
		}
		if wait > 0 {
			listen()
		}
		res, err := s.claim(ctx, p, look)
		if err != nil {
			cancel()
			if look == lookWoken {
				s.hub.Unclaimed(p.QueueName) // the message it was woken for is nobody's now
			}
			return nil, err
		}
		if len(res.Messages) == 0 {
			next = res.NextChange
		}
		remaining := time.Until(deadline)
		if len(res.Messages) > 0 || remaining <= 0 {
			cancel()
			lp.info.Messages = len(res.Messages)
			return res.Messages, nil
		}
		sleep := min(remaining, s.repairInterval())
		if res.Contended {
			// Other receivers took what this claim found; what they left
			// sends no wake-up, so look again after a short, jittered
			// pause (which spreads the receivers that lost together).
			sleep = min(sleep, contendedPause())
			// That look comes whatever wakes this poll: a wake-up that
			// reached it during the claim would be spent on it, and the
			// waiter it was meant for would sleep beside a receivable
			// message. Cancelling hands it on; a fresh subscription
			// catches what comes during the pause.
			cancel()
			listen()
		}
		if l != nil {
			l.Waiting() // wake-ups go to waiting polls first
		}
		if !res.NextChange.IsZero() {
			sleep = untilNextChange(sleep, res.NextChange.Sub(s.wallNow()))
		}
		var pp *parkedPoll
		var handOff <-chan *stores.MessageClaimResult
		if l != nil && s.offersHandOffs(p) {
			pp = s.handOffs.park(p, l)
			handOff = pp.got
		}
		lp.waiting() // counted once a send can find it
		timer := time.NewTimer(sleep)
		var handed *stores.MessageClaimResult
		hinted := false // it took a wake-up off its channel
		select {
		case handed = <-handOff:
			pp = nil
			look = lookWoken // if it got nothing
			lp.info.HandOffs++
		case <-hint:
			hinted = true
			look = lookWoken
			lp.info.Wakeups++
		case <-timer.C:
			look = lookCheck
			lp.info.Checks++
		case <-ctx.Done():
		case <-s.shutdown:
			lp.info.Ended = LongPollShutdown
			next = time.Time{} // nobody is left to wake
		}
		timer.Stop()
		if pp != nil && !s.handOffs.unpark(pp) {
			// A send took it meanwhile: its claim answers, unless the
			// request ends first (nil: the send releases what it took).
			handed, _ = s.handOffs.await(ctx, pp)
		}
		if ctx.Err() != nil {
			cancel()
			if handed != nil {
				s.releaseHandedOff(p, handed.Messages, nil) // nobody receives them now
			}
			if hinted {
				s.hub.Unclaimed(p.QueueName) // nobody acts on the wake-up it took
			}
			lp.info.Ended = LongPollCancelled
			return nil, ctx.Err()
		}
		if handed != nil && len(handed.Messages) > 0 {
			cancel()
			if hinted {
				s.hub.Unclaimed(p.QueueName) // the wake-up it took is another message's
			}
			lp.info.Ended = ""
			lp.info.Messages = len(handed.Messages)
			return handed.Messages, nil
		}
		cancel()
		if lp.info.Ended == LongPollShutdown {
			return nil, nil
		}
	}
}

// A look is why a receive's claim runs.
type look int

const (
	lookFirst look = iota // a receive's first claim: the idle memo may answer it
	lookWoken             // a long poll woken for a message: the wake-up speaks for it (Config.TrustWokenPolls)
	lookCheck             // the repair check, or a known visibility change: ask the store, whatever the memo says
)

// claim claims once, or, for a receive's first look, answers from the idle
// memo unless the claim names a receive attempt (a replay must reach the
// store).
func (s *Service) claim(ctx context.Context, p *stores.MessageClaimParams, look look) (*stores.MessageClaimResult, error) {
	p.Now = s.now()
	p.Token = newToken(p.Now)
	memo := p.AttemptID == ""
	start := s.wallNow()
	if memo && look == lookFirst {
		if next, ok := s.idle.answer(p.QueueName, p.QueueID, start); ok {
			return &stores.MessageClaimResult{NextChange: next}, nil
		}
	}
	mark := s.idle.begin()
	res, err := s.store.MessageClaim(ctx, p)
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	s.wakeAfterClaim(ctx, p, res)
	switch {
	case len(res.Messages) == 0 && res.Redriven == 0 && !res.Contended:
		if memo {
			s.idle.remember(p.QueueName, p.QueueID, mark, start, res.NextChange)
		}
	case look == lookWoken && s.idle.trustWoken && res.Redriven == 0 && !res.Contended:
		// What it took was spoken for, so the memo stays right; but those
		// messages come back when their visibility ends.
		s.idle.receivedUntil(p.QueueName, start.Add(max(p.VisibilityTimeout, 0)))
	default:
		s.idle.forget(p.QueueName) // what it knew was wrong, or is now
	}
	return res, nil
}

// handOnNextChange is what a receive that leaves does with the NextChange
// its last empty claim learned (a delayed message's delay ending, say):
// when it is still to come and sooner than the waiting long polls' own
// checks of the store, the hub wakes one of them then (wake.Hub.WakeAfter).
// They may not know it: the wake-up of the send that made it went to this
// receive, and they claimed before. A short poll hands it on too.
//
// When that change has come, the receive looked then and took what it
// brought; the change after it (a second delayed message, say) is known to
// nobody, since a claim that takes messages reports none. The hub wakes a
// waiting poll now, whose claim learns it.
func (s *Service) handOnNextChange(queue string, next time.Time) {
	if next.IsZero() {
		return
	}
	if d := next.Sub(s.wallNow()); d < s.repairInterval() {
		s.hub.WakeAfter(queue, max(d, 0))
	}
}

// nextChangeFloor is the shortest wait for a NextChange.
const nextChangeFloor = 20 * time.Millisecond

// untilNextChange shortens a long poll's sleep to end when a known
// visibility change comes, d from now, but not below nextChangeFloor:
// NextChange is on the store's clock, which may lag this one, and a poll
// must not spin while they disagree. The floor never lengthens the sleep,
// which already ends by the poll's deadline.
func untilNextChange(sleep, d time.Duration) time.Duration {
	if d >= sleep {
		return sleep
	}
	return min(max(d, nextChangeFloor), sleep)
}

// contendedPause is how long a long poll whose claim lost to other
// receivers waits before it looks again: 10 to 40 ms.
func contendedPause() time.Duration {
	return 10*time.Millisecond + rand.N(30*time.Millisecond)
}

// repairInterval is how long a long poll waits for a wake-up before it
// checks the store itself: a lost wake-up costs at most this much latency.
func (s *Service) repairInterval() time.Duration {
	if s.hub.Degraded() {
		return max(s.cfg.RepairInterval/8, 10*time.Millisecond)
	}
	return s.cfg.RepairInterval
}

var messageSystemAttributeNames = map[string]bool{
	contract.MsgAttrAll: true, contract.MsgAttrSenderID: true, contract.MsgAttrSentTimestamp: true,
	contract.MsgAttrApproxReceiveCount: true, contract.MsgAttrApproxFirstReceive: true,
	contract.MsgAttrSequenceNumber: true, contract.MsgAttrMessageDeduplicationID: true,
	contract.MsgAttrMessageGroupID: true, contract.MsgAttrAWSTraceHeader: true,
	contract.MsgAttrDeadLetterQueueSourceArn: true,
}

func isMessageSystemAttributeName(n string) bool { return messageSystemAttributeNames[n] }

type attributeSelection struct {
	system    map[string]bool
	allSystem bool
	user      []string
	allUser   bool
}

func newAttributeSelection(attrNames, sysNames, userNames []string) attributeSelection {
	sel := attributeSelection{system: map[string]bool{}}
	for _, n := range append(append([]string{}, attrNames...), sysNames...) {
		if n == contract.MsgAttrAll {
			sel.allSystem = true
		}
		sel.system[n] = true
	}
	for _, n := range userNames {
		if n == "All" || n == ".*" || n == "*" {
			sel.allUser = true
		}
		sel.user = append(sel.user, n)
	}
	return sel
}

func (a attributeSelection) wantsUser(name string) bool {
	if a.allUser {
		return true
	}
	for _, n := range a.user {
		if n == name || strings.HasSuffix(n, ".*") && strings.HasPrefix(name, strings.TrimSuffix(n, ".*")) {
			return true
		}
	}
	return false
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func (s *Service) renderMessage(q *stores.Queue, m stores.ClaimedMessage, sel attributeSelection) contract.Message {
	out := contract.Message{
		MessageId:     m.ID,
		ReceiptHandle: encodeReceipt(receipt{QueueID: q.ID, MessageID: m.ID, Token: m.Token, Locator: m.Locator}),
		MD5OfBody:     m.MD5OfBody,
		Body:          m.Body,
	}
	attrs := map[string]string{}
	put := func(name, value string) {
		if value != "" && (sel.allSystem || sel.system[name]) {
			attrs[name] = value
		}
	}
	put(contract.MsgAttrSenderID, m.SenderID)
	put(contract.MsgAttrSentTimestamp, millis(m.SentAt))
	put(contract.MsgAttrApproxReceiveCount, strconv.Itoa(m.ReceiveCount))
	if !m.FirstReceivedAt.IsZero() {
		put(contract.MsgAttrApproxFirstReceive, millis(m.FirstReceivedAt))
	}
	put(contract.MsgAttrSequenceNumber, m.SequenceNumber)
	if q.FIFO {
		put(contract.MsgAttrMessageDeduplicationID, m.DedupID)
	}
	put(contract.MsgAttrMessageGroupID, m.GroupID)
	if v, ok := m.SystemAttributes[contract.MsgAttrAWSTraceHeader]; ok && v.StringValue != nil {
		put(contract.MsgAttrAWSTraceHeader, *v.StringValue)
	}
	if m.DeadLetterSource != "" {
		put(contract.MsgAttrDeadLetterQueueSourceArn, s.queueARN(m.DeadLetterSource))
	}
	if len(attrs) > 0 {
		out.Attributes = attrs
	}
	user := map[string]contract.MessageAttributeValue{}
	for name, v := range m.Attributes {
		if sel.wantsUser(name) {
			user[name] = fromStored(v)
		}
	}
	if len(user) > 0 {
		out.MessageAttributes = user
		// The digest covers what is returned, so clients can check it.
		out.MD5OfMessageAttributes = contract.MD5OfAttributes(user)
	}
	return out
}

// receiptFor decodes a handle addressed to q.
func receiptFor(q *stores.Queue, handle string) (receipt, error) {
	if handle == "" {
		return receipt{}, contract.ErrMissingParameter("ReceiptHandle")
	}
	r, ok := decodeReceipt(handle)
	if !ok || r.QueueID != q.ID {
		return receipt{}, contract.ErrReceiptHandleIsInvalid(handle)
	}
	return r, nil
}

// deleteOutcome is the answer to one receipt of a delete. FIFO queues
// refuse a receipt whose delivery ended (timed out, or received again): the
// group may already be with another consumer. Standard queues accept every
// receipt; what it deletes is rules.DeleteApplies.
func deleteOutcome(q *stores.Queue, handle string, outcome stores.ReceiptOutcome) error {
	switch {
	case !q.FIFO, outcome == stores.ReceiptCurrent, outcome == stores.ReceiptGone:
		return nil
	}
	return contract.ErrReceiptHandleExpired(handle)
}

// deleteReceipts deletes the receipts in one store call and returns one
// answer per handle; a handle that does not decode fails on its own.
func (s *Service) deleteReceipts(ctx context.Context, q *stores.Queue, handles []string) ([]error, error) {
	errs := make([]error, len(handles))
	var receipts []stores.Receipt
	var at []int // receipts[k] is handles[at[k]]
	for i, h := range handles {
		r, err := receiptFor(q, h)
		if err != nil {
			errs[i] = err
			continue
		}
		receipts = append(receipts, stores.Receipt{MessageID: r.MessageID, Token: r.Token, Locator: r.Locator})
		at = append(at, i)
	}
	if len(receipts) == 0 {
		return errs, nil
	}
	res, err := s.store.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
		Receipts: receipts, KeepExpired: q.FIFO, Now: s.now()})
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	deleted := 0
	for k, i := range at {
		errs[i] = deleteOutcome(q, handles[i], res.Outcomes[k])
		if rules.DeleteApplies(res.Outcomes[k], q.FIFO) {
			deleted++
		}
	}
	s.wakeAfterDelete(ctx, q, res.Freed)
	s.counts.deleted.Add(uint64(deleted))
	return errs, nil
}

func (s *Service) DeleteMessage(ctx context.Context, in *contract.DeleteMessageInput) (*contract.Empty, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	errs, err := s.deleteReceipts(ctx, q, []string{in.ReceiptHandle})
	if err != nil {
		return nil, err
	}
	if errs[0] != nil {
		return nil, errs[0]
	}
	return &contract.Empty{}, nil
}

func (s *Service) DeleteMessageBatch(ctx context.Context, in *contract.DeleteMessageBatchInput) (*contract.DeleteMessageBatchOutput, error) {
	ok, failed, err := receiptBatch(ctx, s, in.QueueUrl, "DeleteMessageBatchRequestEntry", in.Entries,
		func(e contract.DeleteMessageBatchRequestEntry) string { return e.Id },
		func(q *stores.Queue, entries []contract.DeleteMessageBatchRequestEntry) ([]error, error) {
			handles := make([]string, len(entries))
			for i, e := range entries {
				handles[i] = e.ReceiptHandle
			}
			return s.deleteReceipts(ctx, q, handles)
		})
	if err != nil {
		return nil, err
	}
	return &contract.DeleteMessageBatchOutput{Successful: ok, Failed: failed}, nil
}

// receiptBatch runs a batch of per-receipt operations: the request-level
// checks, then do, which answers each entry (nil: successful), reported as
// successful or failed. An error from do fails the whole request.
func receiptBatch[E any](ctx context.Context, s *Service, queueURL, entryType string, entries []E,
	id func(E) string, do func(*stores.Queue, []E) ([]error, error)) ([]contract.BatchResultEntry, []contract.BatchResultErrorEntry, error) {
	q, err := s.queueFromURL(ctx, queueURL)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = id(e)
	}
	if err := checkBatch(entryType, ids); err != nil {
		return nil, nil, err
	}
	errs, err := do(q, entries)
	if err != nil {
		return nil, nil, err
	}
	ok, failed := []contract.BatchResultEntry{}, []contract.BatchResultErrorEntry{}
	for i, err := range errs {
		if err != nil {
			failed = append(failed, entryError(ids[i], err))
			continue
		}
		ok = append(ok, contract.BatchResultEntry{Id: ids[i]})
	}
	return ok, failed, nil
}

// changeOne changes one delivery's visibility; earlier reports that the
// message becomes visible sooner than it would have.
func (s *Service) changeOne(ctx context.Context, q *stores.Queue, handle string, timeout *int64) (earlier bool, err error) {
	r, err := receiptFor(q, handle)
	if err != nil {
		return false, err
	}
	if timeout == nil {
		return false, contract.ErrMissingParameter("VisibilityTimeout")
	}
	if *timeout < 0 || *timeout > contract.MaxVisibilityTimeout {
		return false, contract.ErrInvalidValue(*timeout, "VisibilityTimeout", "Must be >= 0 and <= 43200, if provided.")
	}
	res, err := s.store.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{
		QueueName: q.Name, QueueID: q.ID, MessageID: r.MessageID, Token: r.Token, Locator: r.Locator,
		Timeout: time.Duration(*timeout) * time.Second, MaxSinceReceive: contract.MaxVisibilityFromReceive, ReceivedAt: tokenTime(r.Token),
		ApplyExpired: !q.FIFO, Now: s.now(),
	})
	if err != nil {
		return false, s.storeErr(ctx, err)
	}
	if res.TooLong {
		return false, contract.ErrInvalidValue(*timeout, "VisibilityTimeout", fmt.Sprintf("Total VisibilityTimeout for the message is beyond the limit [%d seconds]", contract.MaxVisibilityTimeout))
	}
	switch {
	case rules.VisibilityChangeApplies(res.Outcome, !q.FIFO):
		return res.Earlier, nil
	case res.Outcome == stores.ReceiptExpired: // FIFO
		return false, contract.ErrReceiptHandleExpired(handle)
	}
	return false, contract.ErrInvalidValue(handle, "ReceiptHandle", "Message does not exist or is not available for visibility timeout change.")
}

func (s *Service) ChangeMessageVisibility(ctx context.Context, in *contract.ChangeMessageVisibilityInput) (*contract.Empty, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	earlier, err := s.changeOne(ctx, q, in.ReceiptHandle, in.VisibilityTimeout)
	if err != nil {
		return nil, err
	}
	if earlier {
		s.wakeAfterVisibility(ctx, q, 1)
	}
	return &contract.Empty{}, nil
}

func (s *Service) ChangeMessageVisibilityBatch(ctx context.Context, in *contract.ChangeMessageVisibilityBatchInput) (*contract.ChangeMessageVisibilityBatchOutput, error) {
	ok, failed, err := receiptBatch(ctx, s, in.QueueUrl, "ChangeMessageVisibilityBatchRequestEntry", in.Entries,
		func(e contract.ChangeMessageVisibilityBatchRequestEntry) string { return e.Id },
		func(q *stores.Queue, entries []contract.ChangeMessageVisibilityBatchRequestEntry) ([]error, error) {
			errs := make([]error, len(entries))
			n := 0
			for i, e := range entries {
				var earlier bool
				if earlier, errs[i] = s.changeOne(ctx, q, e.ReceiptHandle, e.VisibilityTimeout); earlier {
					n++
				}
			}
			s.wakeAfterVisibility(ctx, q, n)
			return errs, nil
		})
	if err != nil {
		return nil, err
	}
	return &contract.ChangeMessageVisibilityBatchOutput{Successful: ok, Failed: failed}, nil
}
