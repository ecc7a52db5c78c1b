package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
)

// now is the Now the service passes to the store: its clock when it has
// one (tests), else zero so that the store uses its own, or the wall clock
// for a store without one.
func (s *Service) now() time.Time {
	if s.cfg.Clock != nil {
		return s.cfg.Clock()
	}
	if !s.traits.OwnClock {
		return time.Now()
	}
	return time.Time{}
}

// wallNow is the service's own idea of now, for what it stamps itself.
func (s *Service) wallNow() time.Time {
	if s.cfg.Clock != nil {
		return s.cfg.Clock()
	}
	return time.Now()
}

// queueURL is the URL of the queue the store names storeName.
func (s *Service) queueURL(ctx context.Context, storeName string) string {
	base := s.cfg.BaseURL
	if base == "" {
		base, _ = ctx.Value(baseKey{}).(string)
	}
	if base == "" {
		base = "http://localhost:9324"
	}
	c, name := s.owner(storeName)
	return contract.QueueURL(base, c.AccountID, name)
}

// queueARN is the ARN of the queue the store names storeName.
func (s *Service) queueARN(storeName string) string {
	c, name := s.owner(storeName)
	return contract.QueueARN(c.Region, c.AccountID, name)
}

// arnStoreName is the store name of the queue an ARN names, if the ARN is
// the caller's.
func (s *Service) arnStoreName(ctx context.Context, arn string) (string, bool) {
	name, c, ok := s.arnOwner(arn)
	if !ok || c != s.caller(ctx) {
		return "", false
	}
	return name, true
}

// arnOwner is the store name of the queue an ARN names, and its owner.
func (s *Service) arnOwner(arn string) (string, Caller, bool) {
	region, account, name, ok := contract.ParseQueueARN(arn)
	if !ok {
		return "", Caller{}, false
	}
	c := Caller{AccountID: account, Region: region}
	return s.storeName(c, name), c, true
}

// storeErr turns a store error into the SQS error a client sees.
func (s *Service) storeErr(ctx context.Context, err error) error {
	var ce *contract.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, stores.ErrQueueNotFound):
		return contract.ErrQueueDoesNotExist()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, stores.ErrUnavailable):
		s.log.Warn("store unavailable", "err", err)
		return contract.ErrServiceUnavailable()
	}
	s.log.Error("store failure", "request_id", RequestID(ctx), "err", err)
	return contract.ErrInternal()
}

// queueFromURL resolves a QueueUrl to the queue (possibly cached).
func (s *Service) queueFromURL(ctx context.Context, queueURL string) (*stores.Queue, error) {
	name, err := s.queueNameFromURL(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	return s.queueByName(ctx, name)
}

// queueFromURLFresh resolves a QueueUrl reading the store.
func (s *Service) queueFromURLFresh(ctx context.Context, queueURL string) (*stores.Queue, error) {
	name, err := s.queueNameFromURL(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	return s.queueByNameFresh(ctx, name)
}

// queueNameFromURL is the store name of the caller's queue a QueueUrl (or
// a bare queue name) names; another account's URL names no queue of the
// caller's.
func (s *Service) queueNameFromURL(ctx context.Context, queueURL string) (string, error) {
	if queueURL == "" {
		return "", contract.ErrMissingParameter("QueueUrl")
	}
	c := s.caller(ctx)
	account, name, ok := contract.ParseQueueURL(queueURL)
	if account == "" {
		account = c.AccountID
	}
	if !ok || account != c.AccountID {
		return "", contract.ErrQueueDoesNotExist()
	}
	return s.storeName(c, name), nil
}

// queueByName returns the queue, from the cache when it is fresh there.
func (s *Service) queueByName(ctx context.Context, name string) (*stores.Queue, error) {
	if q := s.cache.get(name); q != nil {
		return q, nil
	}
	return s.queueByNameFresh(ctx, name)
}

// queueByNameFresh reads the queue from the store (for read-modify-write).
func (s *Service) queueByNameFresh(ctx context.Context, name string) (*stores.Queue, error) {
	if name == unreachable {
		return nil, contract.ErrQueueDoesNotExist()
	}
	q, err := s.store.QueueGet(ctx, &stores.QueueGetParams{Name: name})
	if err != nil {
		s.cache.forget(name)
		return nil, s.storeErr(ctx, err)
	}
	s.cache.put(q)
	return q, nil
}

// queueFromARN resolves an SQS ARN of the caller's account and region.
func (s *Service) queueFromARN(ctx context.Context, arn string) (*stores.Queue, error) {
	name, ok := s.arnStoreName(ctx, arn)
	if !ok {
		return nil, contract.ErrQueueDoesNotExist()
	}
	return s.queueByName(ctx, name)
}

func (s *Service) CreateQueue(ctx context.Context, in *contract.CreateQueueInput) (*contract.CreateQueueOutput, error) {
	if in.QueueName == "" {
		return nil, contract.ErrMissingParameter("QueueName")
	}
	fifo := false
	if v, ok := in.Attributes[contract.AttrFifoQueue]; ok && strings.EqualFold(v, "true") {
		fifo = true
	}
	if e := contract.ValidQueueName(in.QueueName, fifo); e != nil {
		return nil, e
	}
	given, e := contract.NormalizeQueueAttributes(in.Attributes, fifo, true)
	if e != nil {
		return nil, e
	}
	if e := validateTags(in.Tags, 0); e != nil {
		return nil, e
	}
	name := s.storeName(s.caller(ctx), in.QueueName)
	if err := s.checkRedrive(ctx, name, fifo, in.Attributes[contract.AttrRedrivePolicy]); err != nil {
		return nil, err
	}
	attrs := contract.MergeQueueAttributes(contract.DefaultQueueAttributes(fifo), given)
	if e := contract.CheckQueueAttributeCombination(attrs); e != nil {
		return nil, e
	}
	cfg := contract.ParseQueueConfig(attrs)
	res, err := s.store.QueueCreate(ctx, &stores.QueueCreateParams{
		Queue: &stores.Queue{
			Name: name, ID: newQueueID(), FIFO: fifo, Attributes: attrs, Tags: in.Tags,
			Retention: time.Duration(cfg.RetentionSeconds) * time.Second,
		},
		RecreateCooldown: s.cooldown(contract.QueueRecreateCooldown),
		Now:              s.now(),
	})
	if errors.Is(err, stores.ErrQueueDeletedRecently) {
		return nil, contract.ErrQueueDeletedRecently(in.QueueName)
	}
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	if !res.Created {
		names := make([]string, 0, len(given))
		for k := range given {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !contract.SameQueueAttributeValue(k, res.Queue.Attributes[k], given[k]) {
				return nil, contract.ErrQueueNameExists(k)
			}
		}
	}
	return &contract.CreateQueueOutput{QueueUrl: s.queueURL(ctx, name)}, nil
}

// checkRedrive checks a RedrivePolicy, as the request wrote it (errors
// quote it so), against its dead-letter queue: it must exist, be of the
// source's type and allow the source.
func (s *Service) checkRedrive(ctx context.Context, sourceName string, fifo bool, raw string) error {
	if raw == "" {
		return nil
	}
	p, e := contract.ParseRedrivePolicy(raw)
	if e != nil {
		return e
	}
	dlq, err := s.queueFromARN(ctx, p.DeadLetterTargetArn)
	if err != nil {
		var ce *contract.Error
		if errors.As(err, &ce) && ce.Type == "QueueDoesNotExist" {
			return contract.ErrInvalidValue(raw, contract.AttrRedrivePolicy, "Dead letter target does not exist.")
		}
		return err
	}
	if dlq.FIFO != fifo {
		return contract.ErrInvalidValue(raw, contract.AttrRedrivePolicy, "Dead-letter queue must be same type of queue as the source..") // sic: AWS ends it so
	}
	if dlq.Name == sourceName {
		return contract.ErrInvalidValue(raw, contract.AttrRedrivePolicy, "Dead letter target cannot be the queue itself.")
	}
	if allow := contract.ParseQueueConfig(dlq.Attributes).RedriveAllow; allow != nil && !allow.Allows(s.queueARN(sourceName)) {
		return contract.ErrInvalidValue(raw, contract.AttrRedrivePolicy, "Queue "+s.queueARN(sourceName)+" does not have permission to use "+p.DeadLetterTargetArn+" as a dead-letter queue.")
	}
	return nil
}

func (s *Service) GetQueueUrl(ctx context.Context, in *contract.GetQueueUrlInput) (*contract.GetQueueUrlOutput, error) {
	if in.QueueName == "" {
		return nil, contract.ErrMissingParameter("QueueName")
	}
	c := s.caller(ctx)
	if in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != c.AccountID {
		return nil, contract.ErrQueueDoesNotExist()
	}
	name := s.storeName(c, in.QueueName)
	if _, err := s.queueByName(ctx, name); err != nil {
		return nil, err
	}
	return &contract.GetQueueUrlOutput{QueueUrl: s.queueURL(ctx, name)}, nil
}

func (s *Service) DeleteQueue(ctx context.Context, in *contract.DeleteQueueInput) (*contract.Empty, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	err = s.store.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID, Now: s.now()})
	s.cache.forget(q.Name)
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	s.wakeAfterQueueDelete(ctx, q)
	return &contract.Empty{}, nil
}

func (s *Service) PurgeQueue(ctx context.Context, in *contract.PurgeQueueInput) (*contract.Empty, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	err = s.store.QueuePurge(ctx, &stores.QueuePurgeParams{Name: q.Name, ID: q.ID, MinInterval: s.cooldown(contract.PurgeInterval), Now: s.now()})
	if errors.Is(err, stores.ErrPurgeInProgress) {
		_, name := s.owner(q.Name)
		return nil, contract.ErrPurgeQueueInProgress(name)
	}
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	return &contract.Empty{}, nil
}

// listToken is the opaque NextToken of ListQueues and ListDeadLetterSourceQueues.
func encodeListToken(after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("after:" + after))
}

func decodeListToken(tok *string) (string, error) {
	if tok == nil || *tok == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(*tok)
	if err != nil || !strings.HasPrefix(string(raw), "after:") {
		return "", contract.ErrInvalidParameterValue("Invalid NextToken value.")
	}
	return strings.TrimPrefix(string(raw), "after:"), nil
}

func checkMaxResults(v *int64) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 || *v > contract.MaxListResults {
		return 0, contract.ErrInvalidValue(*v, "MaxResults", "MaxResults must be an integer between 1 and 1000.")
	}
	return int(*v), nil
}

func (s *Service) ListQueues(ctx context.Context, in *contract.ListQueuesInput) (*contract.ListQueuesOutput, error) {
	if err := contract.ValidQueueNamePrefix(in.QueueNamePrefix); err != nil {
		return nil, err
	}
	max, err := checkMaxResults(in.MaxResults)
	if err != nil {
		return nil, err
	}
	after, err := decodeListToken(in.NextToken)
	if err != nil {
		return nil, err
	}
	limit := max
	if limit == 0 {
		limit = contract.MaxListResults
	}
	qs, err := s.listOwn(ctx, in.QueueNamePrefix, after, limit+1)
	if err != nil {
		return nil, err
	}
	out := &contract.ListQueuesOutput{}
	for i, q := range qs {
		if i == limit {
			if max > 0 {
				out.NextToken = encodeListToken(qs[i-1].Name)
			}
			break
		}
		out.QueueUrls = append(out.QueueUrls, s.queueURL(ctx, q.Name))
	}
	return out, nil
}

func (s *Service) ListDeadLetterSourceQueues(ctx context.Context, in *contract.ListDeadLetterSourceQueuesInput) (*contract.ListDeadLetterSourceQueuesOutput, error) {
	q, err := s.queueFromURL(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	max, err := checkMaxResults(in.MaxResults)
	if err != nil {
		return nil, err
	}
	after, err := decodeListToken(in.NextToken)
	if err != nil {
		return nil, err
	}
	limit := max
	if limit == 0 {
		limit = contract.MaxListResults
	}
	arn := s.queueARN(q.Name)
	out := &contract.ListDeadLetterSourceQueuesOutput{QueueUrls: []string{}}
	var last string
	for {
		page, err := s.store.QueueList(ctx, &stores.QueueListParams{After: after, Limit: 500})
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		for _, src := range page {
			after = src.Name
			if p := contract.ParseQueueConfig(src.Attributes).Redrive; p == nil || p.DeadLetterTargetArn != arn {
				continue
			}
			if len(out.QueueUrls) == limit {
				if max > 0 {
					out.NextToken = encodeListToken(last)
				}
				return out, nil
			}
			out.QueueUrls = append(out.QueueUrls, s.queueURL(ctx, src.Name))
			last = src.Name
		}
		if len(page) < 500 {
			return out, nil
		}
	}
}

func (s *Service) GetQueueAttributes(ctx context.Context, in *contract.GetQueueAttributesInput) (*contract.GetQueueAttributesOutput, error) {
	q, err := s.queueFromURLFresh(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range in.AttributeNames {
		if !contract.IsQueueAttributeName(n) {
			return nil, contract.ErrInvalidAttributeName("Unknown Attribute " + n + ".")
		}
		want[n] = true
	}
	all := want[contract.AttrAll]
	out := map[string]string{}
	pick := func(name, value string) {
		if all || want[name] {
			out[name] = value
		}
	}
	for k, v := range q.Attributes {
		pick(k, v)
	}
	pick(contract.AttrQueueArn, s.queueARN(q.Name))
	pick(contract.AttrCreatedTimestamp, strconv.FormatInt(q.CreatedAt.Unix(), 10))
	pick(contract.AttrLastModifiedTimestamp, strconv.FormatInt(q.ModifiedAt.Unix(), 10))
	if all || want[contract.AttrApproxMessages] || want[contract.AttrApproxNotVisible] || want[contract.AttrApproxDelayed] {
		st, err := s.store.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: s.now()})
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		pick(contract.AttrApproxMessages, strconv.FormatInt(st.Visible, 10))
		pick(contract.AttrApproxNotVisible, strconv.FormatInt(st.InFlight, 10))
		pick(contract.AttrApproxDelayed, strconv.FormatInt(st.Delayed, 10))
	}
	if len(out) == 0 {
		return &contract.GetQueueAttributesOutput{}, nil
	}
	return &contract.GetQueueAttributesOutput{Attributes: out}, nil
}

// updateQueue applies a change to a queue's attributes with optimistic
// concurrency, so concurrent SetQueueAttributes and AddPermission calls do
// not lose each other's changes.
func (s *Service) updateQueue(ctx context.Context, queueURL string, change func(q *stores.Queue) (map[string]string, error)) error {
	for attempt := 0; ; attempt++ {
		q, err := s.queueFromURLFresh(ctx, queueURL)
		if err != nil {
			return err
		}
		changes, err := change(q)
		if err != nil {
			return err
		}
		merged := contract.MergeQueueAttributes(q.Attributes, changes)
		diff := map[string]string{}
		for k, v := range merged {
			if q.Attributes[k] != v {
				diff[k] = v
			}
		}
		for k := range q.Attributes {
			if _, ok := merged[k]; !ok {
				diff[k] = ""
			}
		}
		if len(diff) == 0 {
			return nil
		}
		p := &stores.QueueUpdateParams{Name: q.Name, ID: q.ID, IfVersion: q.Version, SetAttributes: diff, Now: s.now()}
		if _, ok := diff[contract.AttrMessageRetentionPeriod]; ok {
			p.Retention = time.Duration(contract.ParseQueueConfig(merged).RetentionSeconds) * time.Second
		}
		_, err = s.store.QueueUpdate(ctx, p)
		s.cache.forget(q.Name)
		if errors.Is(err, stores.ErrVersionConflict) && attempt < 10 {
			continue
		}
		return s.storeErr(ctx, err)
	}
}

func (s *Service) SetQueueAttributes(ctx context.Context, in *contract.SetQueueAttributesInput) (*contract.Empty, error) {
	err := s.updateQueue(ctx, in.QueueUrl, func(q *stores.Queue) (map[string]string, error) {
		changes, e := contract.NormalizeQueueAttributes(in.Attributes, q.FIFO, false)
		if e != nil {
			return nil, e
		}
		if err := s.checkRedrive(ctx, q.Name, q.FIFO, in.Attributes[contract.AttrRedrivePolicy]); err != nil {
			return nil, err
		}
		if e := contract.CheckQueueAttributeCombination(contract.MergeQueueAttributes(q.Attributes, changes)); e != nil {
			return nil, e
		}
		return changes, nil
	})
	if err != nil {
		return nil, err
	}
	return &contract.Empty{}, nil
}

func validateTags(tags map[string]string, existing int) error {
	for k, v := range tags {
		// Lengths in characters, as SQS counts them.
		if n := utf8.RuneCountInString(k); n < 1 || n > contract.MaxTagKeyLength {
			return contract.ErrInvalidParameterValue("Tag keys must be between 1 and 128 characters in length.")
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return contract.ErrInvalidParameterValue("Tag keys cannot start with the aws: prefix.")
		}
		if utf8.RuneCountInString(v) > contract.MaxTagValueLength {
			return contract.ErrInvalidParameterValue("Tag values may only be up to 256 characters in length.")
		}
	}
	if existing+len(tags) > contract.MaxTagsPerQueue {
		return contract.ErrInvalidParameterValue(fmt.Sprintf("Too many tags added for queue. A queue can have at most %d tags.", contract.MaxTagsPerQueue))
	}
	return nil
}

func (s *Service) TagQueue(ctx context.Context, in *contract.TagQueueInput) (*contract.Empty, error) {
	for attempt := 0; ; attempt++ {
		q, err := s.queueFromURLFresh(ctx, in.QueueUrl)
		if err != nil {
			return nil, err
		}
		if len(in.Tags) == 0 {
			return nil, contract.ErrMissingParameter("Tags")
		}
		existing := 0
		for k := range q.Tags {
			if _, ok := in.Tags[k]; !ok {
				existing++
			}
		}
		if err := validateTags(in.Tags, existing); err != nil {
			return nil, err
		}
		// IfVersion: the 50-tag limit was checked against these tags, so
		// concurrent TagQueue calls cannot add up past it.
		_, err = s.store.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: q.Name, ID: q.ID, IfVersion: q.Version,
			SetTags: in.Tags, Now: s.now()})
		s.cache.forget(q.Name)
		if errors.Is(err, stores.ErrVersionConflict) && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		return &contract.Empty{}, nil
	}
}

func (s *Service) UntagQueue(ctx context.Context, in *contract.UntagQueueInput) (*contract.Empty, error) {
	q, err := s.queueFromURLFresh(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.TagKeys) == 0 {
		return nil, contract.ErrMissingParameter("TagKeys")
	}
	_, err = s.store.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: q.Name, ID: q.ID, RemoveTags: in.TagKeys, Now: s.now()})
	s.cache.forget(q.Name)
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	return &contract.Empty{}, nil
}

func (s *Service) ListQueueTags(ctx context.Context, in *contract.ListQueueTagsInput) (*contract.ListQueueTagsOutput, error) {
	q, err := s.queueFromURLFresh(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(q.Tags) == 0 {
		return &contract.ListQueueTagsOutput{}, nil
	}
	return &contract.ListQueueTagsOutput{Tags: q.Tags}, nil
}

// policyDoc is the queue Policy document that AddPermission maintains.
type policyDoc struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id"`
	Statement []json.RawMessage `json:"Statement"`
}

type statementSid struct {
	Sid string `json:"Sid"`
}

func (s *Service) AddPermission(ctx context.Context, in *contract.AddPermissionInput) (*contract.Empty, error) {
	if in.Label == "" {
		return nil, contract.ErrMissingParameter("Label")
	}
	if len(in.Label) > 80 || !contract.ValidBatchEntryID(in.Label) {
		return nil, contract.ErrInvalidValue(in.Label, "Label", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.")
	}
	if len(in.AWSAccountIds) == 0 {
		return nil, contract.ErrMissingParameter("AWSAccountId")
	}
	if len(in.Actions) == 0 {
		return nil, contract.ErrMissingParameter("ActionName")
	}
	for _, a := range in.AWSAccountIds {
		// Accounts only: SQS "does not support adding a non-account
		// principal" (its answer to an ARN, as aws-cli users met it).
		if !contract.ValidAccountID(a) {
			return nil, contract.ErrInvalidValue("["+a+"]", "PrincipalId", "Unable to verify principal.")
		}
	}
	actions := make([]string, 0, len(in.Actions))
	for _, a := range in.Actions {
		if a != "*" && !isSQSAction(a) {
			return nil, contract.ErrInvalidValue(a, "ActionName", "Please refer to the appropriate WSDL for a list of valid actions.")
		}
		actions = append(actions, "SQS:"+a)
	}
	err := s.updateQueue(ctx, in.QueueUrl, func(q *stores.Queue) (map[string]string, error) {
		arn := s.queueARN(q.Name)
		doc := policyDoc{Version: "2008-10-17", ID: arn + "/SQSDefaultPolicy"}
		if raw := q.Attributes[contract.AttrPolicy]; raw != "" {
			_ = json.Unmarshal([]byte(raw), &doc)
		}
		for _, st := range doc.Statement {
			var sid statementSid
			_ = json.Unmarshal(st, &sid)
			if sid.Sid == in.Label {
				return nil, contract.ErrInvalidValue(in.Label, "Label", "Already exists.")
			}
		}
		principals := make([]string, len(in.AWSAccountIds))
		for i, a := range in.AWSAccountIds {
			principals[i] = "arn:aws:iam::" + a + ":root"
		}
		st := map[string]any{"Sid": in.Label, "Effect": "Allow", "Resource": arn}
		if len(principals) == 1 {
			st["Principal"] = map[string]any{"AWS": principals[0]}
		} else {
			st["Principal"] = map[string]any{"AWS": principals}
		}
		if len(actions) == 1 {
			st["Action"] = actions[0]
		} else {
			st["Action"] = actions
		}
		raw, _ := json.Marshal(st)
		doc.Statement = append(doc.Statement, raw)
		out, _ := json.Marshal(doc)
		if e := contract.CheckPolicyQuotas(string(out)); e != nil {
			return nil, e
		}
		return map[string]string{contract.AttrPolicy: string(out)}, nil
	})
	if err != nil {
		return nil, err
	}
	return &contract.Empty{}, nil
}

func (s *Service) RemovePermission(ctx context.Context, in *contract.RemovePermissionInput) (*contract.Empty, error) {
	if in.Label == "" {
		return nil, contract.ErrMissingParameter("Label")
	}
	err := s.updateQueue(ctx, in.QueueUrl, func(q *stores.Queue) (map[string]string, error) {
		var doc policyDoc
		if raw := q.Attributes[contract.AttrPolicy]; raw != "" {
			_ = json.Unmarshal([]byte(raw), &doc)
		}
		kept := doc.Statement[:0:0]
		found := false
		for _, st := range doc.Statement {
			var sid statementSid
			_ = json.Unmarshal(st, &sid)
			if sid.Sid == in.Label {
				found = true
				continue
			}
			kept = append(kept, st)
		}
		if !found {
			return nil, contract.ErrInvalidValue(in.Label, "Label", "can't find label.")
		}
		if len(kept) == 0 {
			return map[string]string{contract.AttrPolicy: ""}, nil
		}
		doc.Statement = kept
		out, _ := json.Marshal(doc)
		return map[string]string{contract.AttrPolicy: string(out)}, nil
	})
	if err != nil {
		return nil, err
	}
	return &contract.Empty{}, nil
}

var sqsActions = map[string]bool{
	"SendMessage": true, "ReceiveMessage": true, "DeleteMessage": true, "ChangeMessageVisibility": true,
	"GetQueueAttributes": true, "GetQueueUrl": true, "ListDeadLetterSourceQueues": true, "PurgeQueue": true,
	"ListQueueTags": true, "SendMessageBatch": true, "DeleteMessageBatch": true, "ChangeMessageVisibilityBatch": true,
}

func isSQSAction(a string) bool { return sqsActions[a] }
