package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"sort"
	"strconv"

	"github.com/sluicehq/sluice/contract"
)

// xmlHeader starts every XML response.
const xmlHeader = `<?xml version="1.0"?>`

// xmlBuf builds an XML document. Text goes through xml.EscapeText, which
// also writes \r, \n and \t as character references so that they survive
// XML parsing (a raw \r would come back as \n) and replaces what XML cannot
// carry at all.
type xmlBuf struct {
	bytes.Buffer
}

func (b *xmlBuf) open(name string) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteByte('>')
}

func (b *xmlBuf) close(name string) {
	b.WriteString("</")
	b.WriteString(name)
	b.WriteByte('>')
}

// elem writes <name>text</name>.
func (b *xmlBuf) elem(name, text string) {
	b.open(name)
	_ = xml.EscapeText(&b.Buffer, []byte(text))
	b.close(name)
}

// opt writes <name>text</name> unless text is empty.
func (b *xmlBuf) opt(name, text string) {
	if text != "" {
		b.elem(name, text)
	}
}

func (b *xmlBuf) int(name string, v int64) { b.elem(name, strconv.FormatInt(v, 10)) }

func (b *xmlBuf) bool(name string, v bool) { b.elem(name, strconv.FormatBool(v)) }

// strMap writes a flattened map of strings as repeated
// <entry><key>k</key><value>v</value></entry>, in key order.
func (b *xmlBuf) strMap(entry, key, value string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		b.open(entry)
		b.elem(key, k)
		b.elem(value, m[k])
		b.close(entry)
	}
}

// attrMap writes a flattened map of message attributes.
func (b *xmlBuf) attrMap(entry string, m map[string]contract.MessageAttributeValue) {
	for _, k := range sortedKeys(m) {
		v := m[k]
		b.open(entry)
		b.elem("Name", k)
		b.open("Value")
		if v.StringValue != nil {
			b.elem("StringValue", *v.StringValue)
		}
		if v.BinaryValue != nil {
			b.elem("BinaryValue", base64.StdEncoding.EncodeToString(v.BinaryValue))
		}
		for _, s := range v.StringListValues {
			b.elem("StringListValue", s)
		}
		for _, bv := range v.BinaryListValues {
			b.elem("BinaryListValue", base64.StdEncoding.EncodeToString(bv))
		}
		b.elem("DataType", v.DataType)
		b.close("Value")
		b.close(entry)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// encodeXML returns the Query protocol response of a successful action.
func encodeXML(op *operation, out any, requestID string) []byte {
	var b xmlBuf
	b.WriteString(xmlHeader)
	b.WriteString("<" + op.name + `Response xmlns="` + contract.XMLNS + `">`)
	if op.toXML != nil {
		b.open(op.name + "Result")
		start := b.Len()
		op.toXML(&b, out)
		if b.Len() == start {
			// An empty result closes itself, as AWS writes it
			// (<ReceiveMessageResult/> when no message was received).
			b.Truncate(start - 1)
			b.WriteString("/>")
		} else {
			b.close(op.name + "Result")
		}
	}
	b.open("ResponseMetadata")
	b.elem("RequestId", requestID)
	b.close("ResponseMetadata")
	b.close(op.name + "Response")
	return b.Bytes()
}

// encodeXMLError returns the Query protocol body of e.
func encodeXMLError(e *contract.Error, requestID string) []byte {
	var b xmlBuf
	b.WriteString(xmlHeader)
	b.WriteString(`<ErrorResponse xmlns="` + contract.XMLNS + `">`)
	b.open("Error")
	if e.Sender {
		b.elem("Type", "Sender")
	} else {
		b.elem("Type", "Receiver")
	}
	b.elem("Code", e.Code)
	b.elem("Message", e.MessageFor(true))
	b.WriteString("<Detail/>")
	b.close("Error")
	b.elem("RequestId", requestID)
	b.close("ErrorResponse")
	return b.Bytes()
}

func (x *exchange) writeXML(op *operation, out any) {
	body := encodeXML(op, out, x.id)
	x.writeHead(contentTypeXML, http.StatusOK, len(body))
	_, _ = x.w.Write(body)
}

func (x *exchange) writeXMLError(e *contract.Error) {
	body := encodeXMLError(e, x.id)
	x.writeHead(contentTypeXML, errStatus(e), len(body))
	_, _ = x.w.Write(body)
}

// ---- per action: the members of <ActionResult>, names as in the Query model

func xmlCancelMessageMoveTask(b *xmlBuf, out *contract.CancelMessageMoveTaskOutput) {
	b.int("ApproximateNumberOfMessagesMoved", out.ApproximateNumberOfMessagesMoved)
}

func xmlBatchErrors(b *xmlBuf, failed []contract.BatchResultErrorEntry) {
	for _, e := range failed {
		b.open("BatchResultErrorEntry")
		b.elem("Id", e.Id)
		b.bool("SenderFault", e.SenderFault)
		b.elem("Code", e.Code)
		b.opt("Message", e.Message)
		b.close("BatchResultErrorEntry")
	}
}

func xmlIDEntries(b *xmlBuf, entry string, ok []contract.BatchResultEntry) {
	for _, e := range ok {
		b.open(entry)
		b.elem("Id", e.Id)
		b.close(entry)
	}
}

func xmlChangeMessageVisibilityBatch(b *xmlBuf, out *contract.ChangeMessageVisibilityBatchOutput) {
	xmlIDEntries(b, "ChangeMessageVisibilityBatchResultEntry", out.Successful)
	xmlBatchErrors(b, out.Failed)
}

func xmlCreateQueue(b *xmlBuf, out *contract.CreateQueueOutput) {
	b.opt("QueueUrl", out.QueueUrl)
}

func xmlDeleteMessageBatch(b *xmlBuf, out *contract.DeleteMessageBatchOutput) {
	xmlIDEntries(b, "DeleteMessageBatchResultEntry", out.Successful)
	xmlBatchErrors(b, out.Failed)
}

func xmlGetQueueAttributes(b *xmlBuf, out *contract.GetQueueAttributesOutput) {
	b.strMap("Attribute", "Name", "Value", out.Attributes)
}

func xmlGetQueueUrl(b *xmlBuf, out *contract.GetQueueUrlOutput) {
	b.opt("QueueUrl", out.QueueUrl)
}

func xmlListDeadLetterSourceQueues(b *xmlBuf, out *contract.ListDeadLetterSourceQueuesOutput) {
	for _, u := range out.QueueUrls {
		b.elem("QueueUrl", u)
	}
	b.opt("NextToken", out.NextToken)
}

func xmlListMessageMoveTasks(b *xmlBuf, out *contract.ListMessageMoveTasksOutput) {
	for _, t := range out.Results {
		b.open("ListMessageMoveTasksResultEntry")
		b.opt("TaskHandle", t.TaskHandle)
		b.opt("Status", t.Status)
		b.opt("SourceArn", t.SourceArn)
		b.opt("DestinationArn", t.DestinationArn)
		if t.MaxNumberOfMessagesPerSecond != nil {
			b.int("MaxNumberOfMessagesPerSecond", *t.MaxNumberOfMessagesPerSecond)
		}
		b.int("ApproximateNumberOfMessagesMoved", t.ApproximateNumberOfMessagesMoved)
		if t.ApproximateNumberOfMessagesToMove != nil {
			b.int("ApproximateNumberOfMessagesToMove", *t.ApproximateNumberOfMessagesToMove)
		}
		b.opt("FailureReason", t.FailureReason)
		b.int("StartedTimestamp", t.StartedTimestamp)
		b.close("ListMessageMoveTasksResultEntry")
	}
}

func xmlListQueueTags(b *xmlBuf, out *contract.ListQueueTagsOutput) {
	b.strMap("Tag", "Key", "Value", out.Tags)
}

func xmlListQueues(b *xmlBuf, out *contract.ListQueuesOutput) {
	for _, u := range out.QueueUrls {
		b.elem("QueueUrl", u)
	}
	b.opt("NextToken", out.NextToken)
}

func xmlReceiveMessage(b *xmlBuf, out *contract.ReceiveMessageOutput) {
	for i := range out.Messages {
		m := &out.Messages[i]
		b.open("Message")
		b.elem("MessageId", m.MessageId)
		b.elem("ReceiptHandle", m.ReceiptHandle)
		b.elem("MD5OfBody", m.MD5OfBody)
		b.elem("Body", m.Body)
		b.strMap("Attribute", "Name", "Value", m.Attributes)
		b.opt("MD5OfMessageAttributes", m.MD5OfMessageAttributes)
		b.attrMap("MessageAttribute", m.MessageAttributes)
		b.close("Message")
	}
}

func xmlSendMessage(b *xmlBuf, out *contract.SendMessageOutput) {
	b.opt("MD5OfMessageBody", out.MD5OfMessageBody)
	b.opt("MD5OfMessageAttributes", out.MD5OfMessageAttributes)
	b.opt("MD5OfMessageSystemAttributes", out.MD5OfMessageSystemAttributes)
	b.opt("MessageId", out.MessageId)
	b.opt("SequenceNumber", out.SequenceNumber)
}

func xmlSendMessageBatch(b *xmlBuf, out *contract.SendMessageBatchOutput) {
	for _, e := range out.Successful {
		b.open("SendMessageBatchResultEntry")
		b.elem("Id", e.Id)
		b.elem("MessageId", e.MessageId)
		b.elem("MD5OfMessageBody", e.MD5OfMessageBody)
		b.opt("MD5OfMessageAttributes", e.MD5OfMessageAttributes)
		b.opt("MD5OfMessageSystemAttributes", e.MD5OfMessageSystemAttributes)
		b.opt("SequenceNumber", e.SequenceNumber)
		b.close("SendMessageBatchResultEntry")
	}
	xmlBatchErrors(b, out.Failed)
}

func xmlStartMessageMoveTask(b *xmlBuf, out *contract.StartMessageMoveTaskOutput) {
	b.opt("TaskHandle", out.TaskHandle)
}
