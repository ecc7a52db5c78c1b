package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/contract"
)

// The Query protocol flattens a request into form parameters whose names
// follow the Query service model (botocore sqs 2012-11-05 up to 1.32.6):
// lists and maps are flattened, each element numbered from 1 under the
// member's locationName, map entries as .N.Name/.N.Value (or .N.Key/.N.Value
// for tags), message attribute values as .N.Value.StringValue and so on.

func (x *exchange) serveQuery(ctx context.Context) {
	values, cerr := x.queryValues()
	if cerr != nil {
		x.fail(cerr)
		return
	}
	action := values.Get("Action")
	x.action = action
	atQueue := pathQueueURL(x.r, false) != "" // the path alone decides
	if action == "" && atQueue {
		x.unknownOperation()
		return
	}
	op := x.h.ops[action]
	if op == nil || atQueue && serviceLevelActions[action] {
		x.fail(contract.ErrInvalidAction(action))
		return
	}
	f, err := newQueryForm(values)
	if err != nil {
		x.fail(err)
		return
	}
	in := op.newInput()
	if err := op.fromQuery(f, in); err != nil {
		x.fail(err)
		return
	}
	x.call(ctx, op, in)
}

// queryValues gathers the parameters of a Query request: those of the URL
// and, for a form-encoded body, those of the body (which win).
func (x *exchange) queryValues() (url.Values, *contract.Error) {
	values, err := url.ParseQuery(x.r.URL.RawQuery)
	if err != nil {
		return nil, contract.ErrMalformedRequest("The query string could not be parsed: " + err.Error() + ".")
	}
	if x.r.Method == http.MethodGet || x.r.Method == http.MethodHead {
		return values, nil
	}
	ct := x.r.Header.Get("Content-Type")
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/x-www-form-urlencoded" {
			return values, nil
		}
	}
	body, cerr := x.readBody()
	if cerr != nil {
		return nil, cerr
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, contract.ErrMalformedRequest("The request body could not be parsed as a form: " + err.Error() + ".")
	}
	for k, v := range form {
		values[k] = v
	}
	return values, nil
}

// maxQueryDepth bounds how many dot-separated parts of a parameter name are
// kept: the deepest name of the model,
// SendMessageBatchRequestEntry.N.MessageAttribute.M.Value.StringListValue.K,
// has seven.
const maxQueryDepth = 8

// queryForm holds a request's parameters as a tree split on ".".
type queryForm struct {
	root *qnode
}

// qnode is one parameter name prefix.
type qnode struct {
	path string // the full parameter name down to here
	val  string
	has  bool // a parameter of exactly this name was sent
	kids map[string]*qnode
}

// newQueryForm builds the tree of a request's parameters. A name part of
// digits is a list index (no member of the model is named with digits), and
// one that is not 1 to 2147483647 written plainly is refused: dropped, an
// attribute would be missing from the digest the client computed.
func newQueryForm(values url.Values) (*queryForm, error) {
	root := &qnode{}
	for key, vals := range values {
		if len(vals) == 0 {
			continue
		}
		parts := strings.Split(key, ".")
		if len(parts) > maxQueryDepth {
			continue
		}
		n := root
		for i, p := range parts {
			if isDigits(p) {
				if _, ok := listIndex(p); !ok {
					return nil, contract.ErrInvalidParameterValue(fmt.Sprintf(
						"The parameter %s has the list index %s; an index is an integer from 1 to %d without leading zeros.",
						contract.Printable(key), p, math.MaxInt32))
				}
			}
			c := n.kids[p]
			if c == nil {
				if n.kids == nil {
					n.kids = make(map[string]*qnode)
				}
				c = &qnode{path: strings.Join(parts[:i+1], ".")}
				n.kids[p] = c
			}
			n = c
		}
		n.val, n.has = vals[0], true
	}
	return &queryForm{root: root}, nil
}

// get returns the node of a parameter name (or prefix), nil when absent.
func (f *queryForm) get(name string) *qnode { return f.root.child(name) }

// child returns a direct child, nil when absent; nil-safe.
func (n *qnode) child(name string) *qnode {
	if n == nil {
		return nil
	}
	return n.kids[name]
}

// str is the value of the parameter, "" when absent; nil-safe.
func (n *qnode) str() string {
	if n == nil {
		return ""
	}
	return n.val
}

// strPtr is the value of the parameter, nil when absent.
func (n *qnode) strPtr() *string {
	if n == nil || !n.has {
		return nil
	}
	v := n.val
	return &v
}

// int64Ptr parses an integer parameter; absent or empty is nil.
func (n *qnode) int64Ptr() (*int64, error) {
	if n == nil || !n.has || n.val == "" {
		return nil, nil
	}
	v, err := strconv.ParseInt(n.val, 10, 64)
	if err != nil {
		return nil, contract.ErrInvalidValue(n.val, n.path, "Must be an integer.")
	}
	return &v, nil
}

// items returns the numbered elements of a flattened list or map
// (.1, .2, ...), ordered by number; gaps are skipped.
func (n *qnode) items() []*qnode {
	if n == nil || len(n.kids) == 0 {
		return nil
	}
	type item struct {
		i int
		n *qnode
	}
	var its []item
	for k, c := range n.kids {
		if i, ok := listIndex(k); ok {
			its = append(its, item{i, c})
		}
	}
	sort.Slice(its, func(a, b int) bool { return its[a].i < its[b].i })
	out := make([]*qnode, len(its))
	for i, it := range its {
		out[i] = it.n
	}
	return out
}

// listIndex parses a list element number: a positive decimal int32
// without sign or leading zeros.
func listIndex(s string) (int, bool) {
	if !isDigits(s) || s[0] == '0' {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(i), true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// strings returns the values of a flattened list of strings.
func (n *qnode) strings() []string {
	var out []string
	for _, it := range n.items() {
		out = append(out, it.val)
	}
	return out
}

// strMap decodes a flattened map of strings whose entries are
// .N.<key>/.N.<value>. An entry without a key parameter gets the key "".
func (n *qnode) strMap(key, value string) map[string]string {
	its := n.items()
	if len(its) == 0 {
		return nil
	}
	m := make(map[string]string, len(its))
	for _, it := range its {
		m[it.child(key).str()] = it.child(value).str()
	}
	return m
}

// attrMap decodes a flattened map of message attributes:
// .N.Name, .N.Value.StringValue, .N.Value.BinaryValue (base64),
// .N.Value.StringListValue.M, .N.Value.BinaryListValue.M, .N.Value.DataType.
func (n *qnode) attrMap() (map[string]contract.MessageAttributeValue, error) {
	its := n.items()
	if len(its) == 0 {
		return nil, nil
	}
	m := make(map[string]contract.MessageAttributeValue, len(its))
	for _, it := range its {
		v := it.child("Value")
		av := contract.MessageAttributeValue{
			StringValue:      v.child("StringValue").strPtr(),
			DataType:         v.child("DataType").str(),
			StringListValues: v.child("StringListValue").strings(),
		}
		if b := v.child("BinaryValue"); b != nil && b.has {
			d, err := decodeBase64(b)
			if err != nil {
				return nil, err
			}
			av.BinaryValue = d
		}
		for _, bl := range v.child("BinaryListValue").items() {
			d, err := decodeBase64(bl)
			if err != nil {
				return nil, err
			}
			av.BinaryListValues = append(av.BinaryListValues, d)
		}
		m[it.child("Name").str()] = av
	}
	return m, nil
}

// decodeBase64 decodes a blob parameter, padded standard base64 as the JSON
// protocol takes it. An empty value is an empty, non-nil slice, so that
// "sent but empty" stays distinct from "not sent".
func decodeBase64(n *qnode) ([]byte, error) {
	s := n.val
	d, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, contract.ErrInvalidValue(contract.Printable(s), n.path, "Must be base64-encoded binary data.")
	}
	if d == nil {
		d = []byte{}
	}
	return d, nil
}

// ---- per action, names as in the Query model

func queryAddPermission(f *queryForm, in *contract.AddPermissionInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.Label = f.get("Label").str()
	in.AWSAccountIds = f.get("AWSAccountId").strings()
	in.Actions = f.get("ActionName").strings()
	return nil
}

func queryCancelMessageMoveTask(f *queryForm, in *contract.CancelMessageMoveTaskInput) error {
	in.TaskHandle = f.get("TaskHandle").str()
	return nil
}

func queryChangeMessageVisibility(f *queryForm, in *contract.ChangeMessageVisibilityInput) (err error) {
	in.QueueUrl = f.get("QueueUrl").str()
	in.ReceiptHandle = f.get("ReceiptHandle").str()
	in.VisibilityTimeout, err = f.get("VisibilityTimeout").int64Ptr()
	return err
}

func queryChangeMessageVisibilityBatch(f *queryForm, in *contract.ChangeMessageVisibilityBatchInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	for _, it := range f.get("ChangeMessageVisibilityBatchRequestEntry").items() {
		vt, err := it.child("VisibilityTimeout").int64Ptr()
		if err != nil {
			return err
		}
		in.Entries = append(in.Entries, contract.ChangeMessageVisibilityBatchRequestEntry{
			Id:                it.child("Id").str(),
			ReceiptHandle:     it.child("ReceiptHandle").str(),
			VisibilityTimeout: vt,
		})
	}
	return nil
}

func queryCreateQueue(f *queryForm, in *contract.CreateQueueInput) error {
	in.QueueName = f.get("QueueName").str()
	in.Attributes = f.get("Attribute").strMap("Name", "Value")
	in.Tags = f.get("Tag").strMap("Key", "Value")
	return nil
}

func queryDeleteMessage(f *queryForm, in *contract.DeleteMessageInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.ReceiptHandle = f.get("ReceiptHandle").str()
	return nil
}

func queryDeleteMessageBatch(f *queryForm, in *contract.DeleteMessageBatchInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	for _, it := range f.get("DeleteMessageBatchRequestEntry").items() {
		in.Entries = append(in.Entries, contract.DeleteMessageBatchRequestEntry{
			Id:            it.child("Id").str(),
			ReceiptHandle: it.child("ReceiptHandle").str(),
		})
	}
	return nil
}

func queryDeleteQueue(f *queryForm, in *contract.DeleteQueueInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	return nil
}

func queryGetQueueAttributes(f *queryForm, in *contract.GetQueueAttributesInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.AttributeNames = f.get("AttributeName").strings()
	return nil
}

func queryGetQueueUrl(f *queryForm, in *contract.GetQueueUrlInput) error {
	in.QueueName = f.get("QueueName").str()
	in.QueueOwnerAWSAccountId = f.get("QueueOwnerAWSAccountId").str()
	return nil
}

func queryListDeadLetterSourceQueues(f *queryForm, in *contract.ListDeadLetterSourceQueuesInput) (err error) {
	in.QueueUrl = f.get("QueueUrl").str()
	in.NextToken = f.get("NextToken").strPtr()
	in.MaxResults, err = f.get("MaxResults").int64Ptr()
	return err
}

func queryListMessageMoveTasks(f *queryForm, in *contract.ListMessageMoveTasksInput) (err error) {
	in.SourceArn = f.get("SourceArn").str()
	in.MaxResults, err = f.get("MaxResults").int64Ptr()
	return err
}

func queryListQueueTags(f *queryForm, in *contract.ListQueueTagsInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	return nil
}

func queryListQueues(f *queryForm, in *contract.ListQueuesInput) (err error) {
	in.QueueNamePrefix = f.get("QueueNamePrefix").str()
	in.NextToken = f.get("NextToken").strPtr()
	in.MaxResults, err = f.get("MaxResults").int64Ptr()
	return err
}

func queryPurgeQueue(f *queryForm, in *contract.PurgeQueueInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	return nil
}

func queryReceiveMessage(f *queryForm, in *contract.ReceiveMessageInput) (err error) {
	in.QueueUrl = f.get("QueueUrl").str()
	in.AttributeNames = f.get("AttributeName").strings()
	// MessageSystemAttributeNames came after the last Query model; accept
	// the singular element name (the pattern of every other list) and the
	// member name.
	in.MessageSystemAttributeNames = append(f.get("MessageSystemAttributeName").strings(),
		f.get("MessageSystemAttributeNames").strings()...)
	in.MessageAttributeNames = f.get("MessageAttributeName").strings()
	if in.MaxNumberOfMessages, err = f.get("MaxNumberOfMessages").int64Ptr(); err != nil {
		return err
	}
	if in.VisibilityTimeout, err = f.get("VisibilityTimeout").int64Ptr(); err != nil {
		return err
	}
	if in.WaitTimeSeconds, err = f.get("WaitTimeSeconds").int64Ptr(); err != nil {
		return err
	}
	in.ReceiveRequestAttemptId = f.get("ReceiveRequestAttemptId").strPtr()
	return nil
}

func queryRemovePermission(f *queryForm, in *contract.RemovePermissionInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.Label = f.get("Label").str()
	return nil
}

func querySendMessage(f *queryForm, in *contract.SendMessageInput) (err error) {
	in.QueueUrl = f.get("QueueUrl").str()
	in.MessageBody = f.get("MessageBody").strPtr()
	if in.DelaySeconds, err = f.get("DelaySeconds").int64Ptr(); err != nil {
		return err
	}
	if in.MessageAttributes, err = f.get("MessageAttribute").attrMap(); err != nil {
		return err
	}
	if in.MessageSystemAttributes, err = f.get("MessageSystemAttribute").attrMap(); err != nil {
		return err
	}
	in.MessageDeduplicationId = f.get("MessageDeduplicationId").strPtr()
	in.MessageGroupId = f.get("MessageGroupId").strPtr()
	return nil
}

func querySendMessageBatch(f *queryForm, in *contract.SendMessageBatchInput) (err error) {
	in.QueueUrl = f.get("QueueUrl").str()
	for _, it := range f.get("SendMessageBatchRequestEntry").items() {
		e := contract.SendMessageBatchRequestEntry{
			Id:                     it.child("Id").str(),
			MessageBody:            it.child("MessageBody").strPtr(),
			MessageDeduplicationId: it.child("MessageDeduplicationId").strPtr(),
			MessageGroupId:         it.child("MessageGroupId").strPtr(),
		}
		if e.DelaySeconds, err = it.child("DelaySeconds").int64Ptr(); err != nil {
			return err
		}
		if e.MessageAttributes, err = it.child("MessageAttribute").attrMap(); err != nil {
			return err
		}
		if e.MessageSystemAttributes, err = it.child("MessageSystemAttribute").attrMap(); err != nil {
			return err
		}
		in.Entries = append(in.Entries, e)
	}
	return nil
}

func querySetQueueAttributes(f *queryForm, in *contract.SetQueueAttributesInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.Attributes = f.get("Attribute").strMap("Name", "Value")
	return nil
}

func queryStartMessageMoveTask(f *queryForm, in *contract.StartMessageMoveTaskInput) (err error) {
	in.SourceArn = f.get("SourceArn").str()
	in.DestinationArn = f.get("DestinationArn").strPtr()
	in.MaxNumberOfMessagesPerSecond, err = f.get("MaxNumberOfMessagesPerSecond").int64Ptr()
	return err
}

func queryTagQueue(f *queryForm, in *contract.TagQueueInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.Tags = f.get("Tag").strMap("Key", "Value")
	return nil
}

func queryUntagQueue(f *queryForm, in *contract.UntagQueueInput) error {
	in.QueueUrl = f.get("QueueUrl").str()
	in.TagKeys = f.get("TagKey").strings()
	return nil
}
