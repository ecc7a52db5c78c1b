package console

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/httpapi"
)

// maxBody bounds an API request: a test message of the largest size SQS
// takes, JSON-escaped, fits.
const maxBody = 4 << 20

// The API, under Path+"/api/". GETs read; POSTs change something and pass
// sameOrigin first.
func (c *Console) serveAPI(w http.ResponseWriter, r *http.Request, s session, name string) {
	type endpoint struct {
		post bool
		run  func(http.ResponseWriter, *http.Request, session)
	}
	endpoints := map[string]endpoint{
		"session": {false, c.apiSession},
		"queues":  {false, c.apiQueues},
		"stats":   {false, c.apiStats},
		"tasks":   {false, c.apiTasks},
		"peek":    {true, c.apiPeek},
		"send":    {true, c.apiSend},
		"purge":   {true, c.apiPurge},
		"redrive": {true, c.apiRedrive},
	}
	e, ok := endpoints[name]
	if !ok {
		writeError(w, http.StatusNotFound, "NotFound", "no such console API: "+printable(name))
		return
	}
	method := http.MethodGet
	if e.post {
		method = http.MethodPost
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use "+method)
		return
	}
	if e.post {
		if err := c.sameOrigin(r, s); err != nil {
			writeError(w, http.StatusForbidden, "Forbidden", "refused: "+err.Error())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		// The body counts against the memory budget the SQS API's bodies
		// share: its declared length, or the most it may be.
		n := r.ContentLength
		if n < 0 || n > maxBody {
			n = maxBody
		}
		if !c.cfg.Budget.Take(n) {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, "RequestThrottled", "too many request bodies are in flight; retry later")
			return
		}
		defer c.cfg.Budget.Give(n)
	}
	e.run(w, r, s)
}

// readJSON decodes the body into v, answering a bad one. Text that is not
// Unicode is marked as the SQS API marks it (httpapi.MarkInvalidText), so
// that a message body the API refuses is refused here too, not repaired.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(httpapi.MarkInvalidText(b), v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", "the body is not the JSON this call takes")
		return false
	}
	return true
}

func (c *Console) apiSession(w http.ResponseWriter, r *http.Request, s session) {
	out := map[string]any{"csrf": c.token(s), "region": c.svc.Region(), "account": c.svc.AccountID(), "auth": "none"}
	if s.key != nil {
		out["auth"] = "sigv4"
		out["accessKeyId"] = s.key.AccessKeyID
		if s.key.AccountID != "" {
			out["account"] = s.key.AccountID
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// queueView is one queue as the page lists it.
type queueView struct {
	Name       string            `json:"name"`
	URL        string            `json:"url"`
	ARN        string            `json:"arn"`
	FIFO       bool              `json:"fifo"`
	Visible    int64             `json:"visible"`
	InFlight   int64             `json:"inFlight"`
	Delayed    int64             `json:"delayed"`
	Attributes map[string]string `json:"attributes"`
	// DeadLetterQueue is the name of the queue its RedrivePolicy moves
	// messages to; Sources, for a dead-letter queue, the queues that do.
	DeadLetterQueue string   `json:"deadLetterQueue,omitempty"`
	Sources         []string `json:"sources,omitempty"`
}

// apiQueues lists the caller's queues (at most MaxQueues) with all their
// attributes: ListQueues, then GetQueueAttributes each.
func (c *Console) apiQueues(w http.ResponseWriter, r *http.Request, s session) {
	ctx := c.context(r, s)
	var urls []string
	var next *string
	more := false
	for {
		max := int64(1000)
		out, err := c.svc.ListQueues(ctx, &contract.ListQueuesInput{MaxResults: &max, NextToken: next})
		if err != nil {
			c.fail(w, r, "ListQueues", err)
			return
		}
		urls = append(urls, out.QueueUrls...)
		if len(urls) > c.cfg.MaxQueues {
			urls, more = urls[:c.cfg.MaxQueues], true
			break
		}
		if out.NextToken == "" {
			break
		}
		next = &out.NextToken
	}
	queues := make([]*queueView, 0, len(urls))
	byARN := map[string]*queueView{}
	for _, u := range urls {
		out, err := c.svc.GetQueueAttributes(ctx, &contract.GetQueueAttributesInput{QueueUrl: u, AttributeNames: []string{contract.AttrAll}})
		if err != nil {
			continue // deleted since the listing
		}
		a := out.Attributes
		_, name, _ := contract.ParseQueueURL(u)
		q := &queueView{Name: name, URL: u, ARN: a[contract.AttrQueueArn], FIFO: a[contract.AttrFifoQueue] == "true", Attributes: a,
			Visible: num(a[contract.AttrApproxMessages]), InFlight: num(a[contract.AttrApproxNotVisible]), Delayed: num(a[contract.AttrApproxDelayed])}
		queues = append(queues, q)
		byARN[q.ARN] = q
	}
	for _, q := range queues {
		p, err := contract.ParseRedrivePolicy(q.Attributes[contract.AttrRedrivePolicy])
		if p == nil || err != nil {
			continue
		}
		q.DeadLetterQueue = arnName(p.DeadLetterTargetArn)
		if dlq := byARN[p.DeadLetterTargetArn]; dlq != nil {
			dlq.Sources = append(dlq.Sources, q.Name)
		}
	}
	sort.Slice(queues, func(i, j int) bool { return queues[i].Name < queues[j].Name })
	writeJSON(w, http.StatusOK, map[string]any{"queues": queues, "truncated": more})
}

func num(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// arnName is the queue name at the end of a queue ARN.
func arnName(arn string) string { return arn[strings.LastIndexByte(arn, ':')+1:] }

// apiStats is what the page turns into rates: this instance's message
// counts so far and the time they were read.
func (c *Console) apiStats(w http.ResponseWriter, r *http.Request, s session) {
	n := c.svc.MessageCounts()
	writeJSON(w, http.StatusOK, map[string]any{"at": time.Now().UnixMilli(), "sent": n.Sent, "received": n.Received,
		"deleted": n.Deleted, "longPollsWaiting": c.svc.LongPollsWaiting()})
}

// apiTasks lists the move tasks of a dead-letter queue (ListMessageMoveTasks).
func (c *Console) apiTasks(w http.ResponseWriter, r *http.Request, s session) {
	max := int64(10)
	out, err := c.svc.ListMessageMoveTasks(c.context(r, s), &contract.ListMessageMoveTasksInput{SourceArn: r.URL.Query().Get("arn"), MaxResults: &max})
	if err != nil {
		c.fail(w, r, "ListMessageMoveTasks", err)
		return
	}
	tasks := out.Results
	if tasks == nil {
		tasks = []contract.ListMessageMoveTasksResultEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks})
}

// messageView is one peeked message.
type messageView struct {
	MessageID  string            `json:"messageId"`
	Body       string            `json:"body"`
	Attributes map[string]string `json:"attributes"`
	// MessageAttributes shows each value as text: string and number values
	// as they are, binary ones in base64.
	MessageAttributes map[string]messageAttr `json:"messageAttributes,omitempty"`
}

type messageAttr struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// apiPeek receives up to Max messages with a visibility timeout of 0: they
// stay visible, but it is a receive (ReceiveCount goes up, and past a
// redrive policy's maxReceiveCount a message moves to its dead-letter
// queue), which the page says.
func (c *Console) apiPeek(w http.ResponseWriter, r *http.Request, s session) {
	var in struct {
		Queue string `json:"queue"`
		Max   int64  `json:"max"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if in.Max == 0 {
		in.Max = 10
	}
	zero := int64(0)
	out, err := c.svc.ReceiveMessage(c.context(r, s), &contract.ReceiveMessageInput{QueueUrl: in.Queue, MaxNumberOfMessages: &in.Max,
		VisibilityTimeout: &zero, WaitTimeSeconds: &zero, MessageSystemAttributeNames: []string{contract.AttrAll},
		MessageAttributeNames: []string{contract.AttrAll}})
	if err != nil {
		c.fail(w, r, "ReceiveMessage", err)
		return
	}
	msgs := make([]messageView, 0, len(out.Messages))
	for _, m := range out.Messages {
		v := messageView{MessageID: m.MessageId, Body: m.Body, Attributes: m.Attributes}
		for name, a := range m.MessageAttributes {
			if v.MessageAttributes == nil {
				v.MessageAttributes = map[string]messageAttr{}
			}
			val := ""
			if a.StringValue != nil {
				val = *a.StringValue
			} else if a.BinaryValue != nil {
				val = base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
			v.MessageAttributes[name] = messageAttr{Type: a.DataType, Value: val}
		}
		msgs = append(msgs, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs})
}

// apiSend sends one message (SendMessage). Empty group and deduplication
// ids are left out, so the service answers as AWS does when a FIFO queue
// needs them.
func (c *Console) apiSend(w http.ResponseWriter, r *http.Request, s session) {
	var in struct {
		Queue        string `json:"queue"`
		Body         string `json:"body"`
		GroupID      string `json:"groupId"`
		DedupID      string `json:"dedupId"`
		DelaySeconds *int64 `json:"delaySeconds"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	send := &contract.SendMessageInput{QueueUrl: in.Queue, MessageBody: &in.Body, DelaySeconds: in.DelaySeconds}
	if in.GroupID != "" {
		send.MessageGroupId = &in.GroupID
	}
	if in.DedupID != "" {
		send.MessageDeduplicationId = &in.DedupID
	}
	out, err := c.svc.SendMessage(c.context(r, s), send)
	if err != nil {
		c.fail(w, r, "SendMessage", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"messageId": out.MessageId, "sequenceNumber": out.SequenceNumber, "md5OfMessageBody": out.MD5OfMessageBody})
}

func (c *Console) apiPurge(w http.ResponseWriter, r *http.Request, s session) {
	var in struct {
		Queue string `json:"queue"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if _, err := c.svc.PurgeQueue(c.context(r, s), &contract.PurgeQueueInput{QueueUrl: in.Queue}); err != nil {
		c.fail(w, r, "PurgeQueue", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// apiRedrive starts a move task out of a dead-letter queue
// (StartMessageMoveTask): to its source queues, or to Destination.
func (c *Console) apiRedrive(w http.ResponseWriter, r *http.Request, s session) {
	var in struct {
		SourceARN      string `json:"sourceArn"`
		DestinationARN string `json:"destinationArn"`
		MaxPerSecond   *int64 `json:"maxPerSecond"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	start := &contract.StartMessageMoveTaskInput{SourceArn: in.SourceARN, MaxNumberOfMessagesPerSecond: in.MaxPerSecond}
	if in.DestinationARN != "" {
		start.DestinationArn = &in.DestinationARN
	}
	out, err := c.svc.StartMessageMoveTask(c.context(r, s), start)
	if err != nil {
		c.fail(w, r, "StartMessageMoveTask", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"taskHandle": out.TaskHandle})
}
