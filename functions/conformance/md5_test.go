package conformance

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// The suite's digest implementation against digests that real SQS returned
// (snapshot test names in the comments).
func TestMD5OfAttributesRecorded(t *testing.T) {
	three := map[string]contract.MessageAttributeValue{
		"Help.Me": strAttr("Me"),
		"Hello":   strAttr("There"),
		"General": strAttr("Kenobi"),
	}
	num := "1493147359900"
	for _, c := range []struct {
		name  string
		attrs map[string]contract.MessageAttributeValue
		want  string
	}{
		// test_dead_letter_queue_message_attributes
		{"MyAttribute", map[string]contract.MessageAttributeValue{"MyAttribute": strAttr("foobar")}, "adb59cd4678ea5a855436b949cd07ab6"},
		// test_receive_message_attribute_names_filters
		{"Foo", map[string]contract.MessageAttributeValue{"Foo": strAttr("Bar")}, "ae7155c6026991b6d54b11589678bf9c"},
		// test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size
		{"k", map[string]contract.MessageAttributeValue{"k": strAttr("x")}, "a45daa70926828a2f0a1db3418e6feb4"},
		// test_aws_trace_header_propagation
		{"Number", map[string]contract.MessageAttributeValue{"timestamp": {DataType: "Number", StringValue: &num}}, "235c5c510d26fb653d073faed50ae77c"},
		// test_send_message_with_binary_attributes
		{"Binary", map[string]contract.MessageAttributeValue{"attr1": {DataType: "Binary",
			BinaryValue: []byte("traceparent\x1e00-774062d6c37081a5a0b9b5b88e30627c-2d2482211f6489da-01")}}, "8cbe4db156db8a94db8b801b7addb984"},
		// test_receive_message_message_attribute_names_filters
		{"three", three, "4c360f3fdafd970e05fae2f149d997f5"},
		{"Hello+General", pick(three, "Hello", "General"), "fca026605781cb4126a1e9044df24232"},
		{"Hello", pick(three, "Hello"), "a311262e065454b75da111d535b8dacd"},
		{"Hello+Help.Me", pick(three, "Hello", "Help.Me"), "83fee93c1bcd8b9a5a923ffacdc636c7"},
		// validated test_system_attributes_have_no_effect_on_attr_md5 (MD5OfMessageSystemAttributes)
		{"AWSTraceHeader", map[string]contract.MessageAttributeValue{"AWSTraceHeader": strAttr(traceHeader)}, "5ae4d5d7636402d80f4eb6d213245a88"},
		{"none", nil, ""},
	} {
		if got := md5OfAttributes(c.attrs); got != c.want {
			t.Errorf("%s: md5OfAttributes = %s, want %s", c.name, got, c.want)
		}
	}
	if got, want := md5OfBody("message"), "78e731027d8fd50ed642340b7c9a63b3"; got != want {
		t.Errorf("md5OfBody(message) = %s, want %s", got, want)
	}
}

func TestClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(61 * time.Second)
	if want := start.Add(61 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: Now = %v, want %v", c.Now(), want)
	}
}
