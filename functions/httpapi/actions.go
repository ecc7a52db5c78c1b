package httpapi

import (
	"context"
	"reflect"
	"sort"

	"github.com/sluicehq/sluice/functions/service"
)

// operation is one entry of the dispatch table: how to make the action's
// input, fill it from either protocol, call the service and write the output
// as XML. JSON needs nothing per action: bodies decode straight into the
// contract types.
type operation struct {
	name     string
	newInput func() any
	call     func(ctx context.Context, svc *service.Service, in any) (any, error)
	// fromQuery fills in (made by newInput) from Query parameters.
	fromQuery func(f *queryForm, in any) error
	// toXML writes the members of the <NameResult> element; nil when the
	// action has no output members (no Result element at all).
	toXML func(b *xmlBuf, out any)
	// queueURL and setQueueURL read and write the input's QueueUrl; nil
	// when the action has none.
	queueURL    func(in any) string
	setQueueURL func(in any, url string)
	// inputType and outputType are the contract types (not pointers).
	inputType, outputType reflect.Type
}

// op builds an operation from a service method and the Query codec halves.
func op[I, O any](name string,
	call func(*service.Service, context.Context, *I) (*O, error),
	fromQuery func(f *queryForm, in *I) error,
	toXML func(b *xmlBuf, out *O),
) *operation {
	o := &operation{
		name:     name,
		newInput: func() any { return new(I) },
		call: func(ctx context.Context, svc *service.Service, in any) (any, error) {
			out, err := call(svc, ctx, in.(*I))
			if err != nil {
				return nil, err
			}
			if out == nil {
				return new(O), nil
			}
			return out, nil
		},
		fromQuery:  func(f *queryForm, in any) error { return fromQuery(f, in.(*I)) },
		inputType:  reflect.TypeFor[I](),
		outputType: reflect.TypeFor[O](),
	}
	if toXML != nil {
		o.toXML = func(b *xmlBuf, out any) { toXML(b, out.(*O)) }
	}
	if sf, ok := reflect.TypeFor[I]().FieldByName("QueueUrl"); ok && sf.Type.Kind() == reflect.String {
		idx := sf.Index
		o.queueURL = func(in any) string { return reflect.ValueOf(in).Elem().FieldByIndex(idx).String() }
		o.setQueueURL = func(in any, u string) { reflect.ValueOf(in).Elem().FieldByIndex(idx).SetString(u) }
	}
	return o
}

// operations is the dispatch table, by action name.
var operations = buildOperations()

func buildOperations() map[string]*operation {
	type S = service.Service
	list := []*operation{
		op("AddPermission", (*S).AddPermission, queryAddPermission, nil),
		op("CancelMessageMoveTask", (*S).CancelMessageMoveTask, queryCancelMessageMoveTask, xmlCancelMessageMoveTask),
		op("ChangeMessageVisibility", (*S).ChangeMessageVisibility, queryChangeMessageVisibility, nil),
		op("ChangeMessageVisibilityBatch", (*S).ChangeMessageVisibilityBatch, queryChangeMessageVisibilityBatch, xmlChangeMessageVisibilityBatch),
		op("CreateQueue", (*S).CreateQueue, queryCreateQueue, xmlCreateQueue),
		op("DeleteMessage", (*S).DeleteMessage, queryDeleteMessage, nil),
		op("DeleteMessageBatch", (*S).DeleteMessageBatch, queryDeleteMessageBatch, xmlDeleteMessageBatch),
		op("DeleteQueue", (*S).DeleteQueue, queryDeleteQueue, nil),
		op("GetQueueAttributes", (*S).GetQueueAttributes, queryGetQueueAttributes, xmlGetQueueAttributes),
		op("GetQueueUrl", (*S).GetQueueUrl, queryGetQueueUrl, xmlGetQueueUrl),
		op("ListDeadLetterSourceQueues", (*S).ListDeadLetterSourceQueues, queryListDeadLetterSourceQueues, xmlListDeadLetterSourceQueues),
		op("ListMessageMoveTasks", (*S).ListMessageMoveTasks, queryListMessageMoveTasks, xmlListMessageMoveTasks),
		op("ListQueueTags", (*S).ListQueueTags, queryListQueueTags, xmlListQueueTags),
		op("ListQueues", (*S).ListQueues, queryListQueues, xmlListQueues),
		op("PurgeQueue", (*S).PurgeQueue, queryPurgeQueue, nil),
		op("ReceiveMessage", (*S).ReceiveMessage, queryReceiveMessage, xmlReceiveMessage),
		op("RemovePermission", (*S).RemovePermission, queryRemovePermission, nil),
		op("SendMessage", (*S).SendMessage, querySendMessage, xmlSendMessage),
		op("SendMessageBatch", (*S).SendMessageBatch, querySendMessageBatch, xmlSendMessageBatch),
		op("SetQueueAttributes", (*S).SetQueueAttributes, querySetQueueAttributes, nil),
		op("StartMessageMoveTask", (*S).StartMessageMoveTask, queryStartMessageMoveTask, xmlStartMessageMoveTask),
		op("TagQueue", (*S).TagQueue, queryTagQueue, nil),
		op("UntagQueue", (*S).UntagQueue, queryUntagQueue, nil),
	}
	m := make(map[string]*operation, len(list))
	for _, o := range list {
		m[o.name] = o
	}
	return m
}

func actionNames() []string {
	names := make([]string, 0, len(operations))
	for n := range operations {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
