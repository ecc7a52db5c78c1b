package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func wantAttrs(t *testing.T, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("attribute %s missing, want %q", k, want[k])
		} else if g != want[k] {
			t.Errorf("attribute %s = %q, want %q", k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected attribute %s = %q", k, got[k])
		}
	}
}

func testAttributes(t *testing.T, s suite) {
	testAttributeErrors(t, s)

	s.test(t, "StandardDefaults", func(e *env) {
		// snapshot test_set_queue_attributes_default_values.
		url := e.create("std", nil)
		ts := strconv.FormatInt(e.clock.Now().Unix(), 10)
		want := map[string]string{
			"ApproximateNumberOfMessages":           "0",
			"ApproximateNumberOfMessagesDelayed":    "0",
			"ApproximateNumberOfMessagesNotVisible": "0",
			"CreatedTimestamp":                      ts,
			"DelaySeconds":                          "0",
			"LastModifiedTimestamp":                 ts,
			"MaximumMessageSize":                    "1048576",
			"MessageRetentionPeriod":                "345600",
			"QueueArn":                              queueARN("std"),
			"ReceiveMessageWaitTimeSeconds":         "0",
			"SqsManagedSseEnabled":                  "true",
			"VisibilityTimeout":                     "30",
		}
		wantAttrs(e.t, e.attrs(url, "All"), want)
	})

	s.test(t, "FIFODefaults", func(e *env) {
		// snapshot test_fifo_set_content_based_deduplication_strategy and
		// test_fifo_change_to_regular_throughput_after_creation.
		url := e.createFIFO("f.fifo", nil)
		ts := strconv.FormatInt(e.clock.Now().Unix(), 10)
		want := map[string]string{
			"ApproximateNumberOfMessages":           "0",
			"ApproximateNumberOfMessagesDelayed":    "0",
			"ApproximateNumberOfMessagesNotVisible": "0",
			"ContentBasedDeduplication":             "false",
			"CreatedTimestamp":                      ts,
			"DeduplicationScope":                    "queue",
			"DelaySeconds":                          "0",
			"FifoQueue":                             "true",
			"FifoThroughputLimit":                   "perQueue",
			"LastModifiedTimestamp":                 ts,
			"MaximumMessageSize":                    "1048576",
			"MessageRetentionPeriod":                "345600",
			"QueueArn":                              queueARN("f.fifo"),
			"ReceiveMessageWaitTimeSeconds":         "0",
			"SqsManagedSseEnabled":                  "true",
			"VisibilityTimeout":                     "30",
		}
		wantAttrs(e.t, e.attrs(url, "All"), want)
	})

	s.test(t, "CreateWithAttributes", func(e *env) {
		// snapshot test_create_and_update_queue_attributes.
		url := e.create("q", map[string]string{"MessageRetentionPeriod": "604800", "ReceiveMessageWaitTimeSeconds": "10", "VisibilityTimeout": "20"})
		a := e.attrs(url, "All")
		for k, v := range map[string]string{"MessageRetentionPeriod": "604800", "ReceiveMessageWaitTimeSeconds": "10", "VisibilityTimeout": "20",
			"DelaySeconds": "0", "MaximumMessageSize": "1048576"} {
			if a[k] != v {
				e.t.Errorf("%s = %q, want %q", k, a[k], v)
			}
		}
		e.setAttrs(url, map[string]string{"MaximumMessageSize": "2048", "VisibilityTimeout": "69", "DelaySeconds": "420"})
		a = e.attrs(url, "All")
		for k, v := range map[string]string{"MessageRetentionPeriod": "604800", "ReceiveMessageWaitTimeSeconds": "10", "VisibilityTimeout": "69",
			"DelaySeconds": "420", "MaximumMessageSize": "2048"} {
			if a[k] != v {
				e.t.Errorf("after update %s = %q, want %q", k, a[k], v)
			}
		}
	})

	s.test(t, "SelectedNames", func(e *env) {
		// validated test_create_queue_and_get_attributes: exactly the names asked for.
		url := e.create("q", nil)
		a := e.attrs(url, "QueueArn", "CreatedTimestamp", "VisibilityTimeout")
		wantAttrs(e.t, a, map[string]string{"QueueArn": queueARN("q"),
			"CreatedTimestamp": strconv.FormatInt(e.clock.Now().Unix(), 10), "VisibilityTimeout": "30"})
		wantAttrs(e.t, e.attrs(url, "DelaySeconds"), map[string]string{"DelaySeconds": "0"})
		// "All" with other names still means all.
		if got := e.attrs(url, "All", "DelaySeconds"); len(got) != 12 {
			e.t.Errorf("All+DelaySeconds returned %d attributes, want 12", len(got))
		}
		// FIFO-only names on a Standard queue are not returned.
		if got := e.attrs(url, "FifoQueue"); len(got) != 0 {
			e.t.Errorf("FifoQueue on a Standard queue returned %v, want nothing", got)
		}
	})

	s.test(t, "UnknownName", func(e *env) {
		// validated test_get_queue_attributes_with_invalid_arg_returns_error.
		url := e.create("q", nil)
		_, err := e.svc.GetQueueAttributes(e.op(), &contract.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []string{"Foobar"}})
		wantErr(e.t, err, contract.ErrUnknownAttribute("Foobar"))
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"Foobar": "1"}})
		wantErr(e.t, err, contract.ErrUnknownAttribute("Foobar"))
		// Read-only attributes cannot be set.
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"QueueArn": "x"}})
		wantErrCode(e.t, err, "InvalidAttributeName", 400)
	})

	s.test(t, "Ranges", func(e *env) {
		// docs give the ranges; AWS answers InvalidAttributeValue with
		// "Invalid value for the parameter <Name>." (seen on real AWS),
		// sluice may add a reason: prefix only.
		url := e.create("q", nil)
		for _, c := range []struct {
			name      string
			good, bad []string
		}{
			{"VisibilityTimeout", []string{"0", "43200", "30"}, []string{"-1", "43201", "abc", "1.5", ""}},
			{"DelaySeconds", []string{"0", "900"}, []string{"-1", "901", "x"}},
			{"MaximumMessageSize", []string{"1024", "1048576"}, []string{"1023", "1048577", "0"}},
			{"MessageRetentionPeriod", []string{"60", "1209600", "345600"}, []string{"59", "1209601"}},
			{"ReceiveMessageWaitTimeSeconds", []string{"0", "20"}, []string{"-1", "21"}},
			{"KmsDataKeyReusePeriodSeconds", []string{"60", "86400", "300"}, []string{"59", "86401"}},
		} {
			last := ""
			for _, v := range c.good {
				e.setAttrs(url, map[string]string{c.name: v})
				last = v
				if got := e.attrs(url, c.name)[c.name]; got != v {
					e.t.Errorf("%s set to %q reads %q", c.name, v, got)
				}
			}
			for _, v := range c.bad {
				_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{c.name: v}})
				wantErrPrefix(e.t, err, "InvalidAttributeValue", 400, "Invalid value for the parameter "+c.name)
				if got := e.attrs(url, c.name)[c.name]; got != last {
					e.t.Errorf("%s = %q after rejected %q, want %q", c.name, got, v, last)
				}
				_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "bad", Attributes: map[string]string{c.name: v}})
				wantErrPrefix(e.t, err, "InvalidAttributeValue", 400, "Invalid value for the parameter "+c.name)
			}
		}
		_, err := e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: "bad"})
		wantErr(e.t, err, contract.ErrQueueDoesNotExist())
	})

	s.test(t, "QueueTypeCannotChange", func(e *env) {
		// snapshot test_set_unsupported_attribute_standard / _fifo.
		std := e.create("std", nil)
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: std, Attributes: map[string]string{"FifoQueue": "true"}})
		wantErr(e.t, err, contract.ErrUnknownAttribute("FifoQueue"))
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: std, Attributes: map[string]string{"ContentBasedDeduplication": "true"}})
		wantErrCode(e.t, err, "InvalidAttributeName", 400)
		f := e.createFIFO("f.fifo", nil)
		e.setAttrs(f, map[string]string{"FifoQueue": "true"})
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: f, Attributes: map[string]string{"FifoQueue": "false"}})
		wantErr(e.t, err, contract.ErrInvalidAttributeValue("Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."))
		if got := e.attrs(f, "FifoQueue")["FifoQueue"]; got != "true" {
			e.t.Errorf("FifoQueue = %q, want true", got)
		}
	})

	s.test(t, "FIFOSettings", func(e *env) {
		// snapshot test_fifo_set_content_based_deduplication_strategy.
		f := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		if got := e.attrs(f, "ContentBasedDeduplication")["ContentBasedDeduplication"]; got != "true" {
			e.t.Errorf("ContentBasedDeduplication = %q, want true", got)
		}
		e.setAttrs(f, map[string]string{"ContentBasedDeduplication": "false"})
		if got := e.attrs(f, "ContentBasedDeduplication")["ContentBasedDeduplication"]; got != "false" {
			e.t.Errorf("ContentBasedDeduplication = %q, want false", got)
		}
		// snapshot test_fifo_change_to_high_throughput_after_creation.
		e.setAttrs(f, map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		a := e.attrs(f, "All")
		if a["DeduplicationScope"] != "messageGroup" || a["FifoThroughputLimit"] != "perMessageGroupId" {
			e.t.Errorf("DeduplicationScope, FifoThroughputLimit = %q, %q; want messageGroup, perMessageGroupId", a["DeduplicationScope"], a["FifoThroughputLimit"])
		}
		for k, v := range map[string]string{"DeduplicationScope": "group", "FifoThroughputLimit": "perGroup", "ContentBasedDeduplication": "yes"} {
			_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: f, Attributes: map[string]string{k: v}})
			wantErrCode(e.t, err, "InvalidAttributeValue", 400)
		}
	})

	s.test(t, "LastModifiedTimestamp", func(e *env) {
		url := e.create("q", nil)
		created := strconv.FormatInt(e.clock.Now().Unix(), 10)
		e.clock.Advance(secs(10))
		e.send(url, "a message changes no attribute")
		if a := e.attrs(url, "LastModifiedTimestamp"); a["LastModifiedTimestamp"] != created {
			e.t.Errorf("LastModifiedTimestamp after a send = %q, want %q", a["LastModifiedTimestamp"], created)
		}
		e.setAttrs(url, map[string]string{"VisibilityTimeout": "31"})
		a := e.attrs(url, "CreatedTimestamp", "LastModifiedTimestamp")
		if want := strconv.FormatInt(e.clock.Now().Unix(), 10); a["LastModifiedTimestamp"] != want {
			e.t.Errorf("LastModifiedTimestamp = %q, want %q", a["LastModifiedTimestamp"], want)
		}
		if a["CreatedTimestamp"] != created {
			e.t.Errorf("CreatedTimestamp = %q, want %q", a["CreatedTimestamp"], created)
		}
	})

	s.test(t, "RedrivePolicy", func(e *env) {
		dlq := e.create("dlq", nil)
		src := e.create("src", nil)
		dlqArn := queueARN("dlq")
		e.setAttrs(src, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":42}`, dlqArn)})
		var rp map[string]any
		if err := json.Unmarshal([]byte(e.attrs(src, "RedrivePolicy")["RedrivePolicy"]), &rp); err != nil {
			e.t.Fatalf("RedrivePolicy is not JSON: %v", err)
		}
		// validated test_get_specific_queue_attribute_response: the count
		// comes back as a JSON number.
		if rp["deadLetterTargetArn"] != dlqArn || rp["maxReceiveCount"] != float64(42) {
			e.t.Errorf("RedrivePolicy = %v, want deadLetterTargetArn %s and maxReceiveCount 42", rp, dlqArn)
		}
		// validated test_set_empty_redrive_policy: a string count is accepted.
		e.setAttrs(src, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"5"}`, dlqArn)})
		good := e.attrs(src, "RedrivePolicy")["RedrivePolicy"]
		// Rejected policies leave the old one. AWS's code and wording for
		// these are not recorded; either parameter code is accepted.
		for _, bad := range []string{
			`not json`,
			fmt.Sprintf(`{"deadLetterTargetArn":%q}`, dlqArn),
			`{"maxReceiveCount":5}`,
			fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":0}`, dlqArn),
			fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1001}`, dlqArn),
			fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"invalid"}`, dlqArn),
			fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, queueARN("missing")),
			`{"deadLetterTargetArn":"dummy","maxReceiveCount":5}`,
		} {
			_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: src, Attributes: map[string]string{"RedrivePolicy": bad}})
			wantErrCodeIn(e.t, err, "InvalidParameterValue", "InvalidAttributeValue")
			if got := e.attrs(src, "RedrivePolicy")["RedrivePolicy"]; got != good {
				e.t.Errorf("RedrivePolicy after rejected %s = %q, want %q", bad, got, good)
			}
		}
		e.setAttrs(src, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1000}`, dlqArn)})
		e.setAttrs(src, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqArn)})
		// validated test_set_empty_redrive_policy: "" removes it.
		e.setAttrs(src, map[string]string{"RedrivePolicy": ""})
		if _, ok := e.attrs(src, "All")["RedrivePolicy"]; ok {
			e.t.Error("RedrivePolicy still present after setting it to empty")
		}
		e.setAttrs(dlq, map[string]string{"RedrivePolicy": ""}) // on a queue that never had one
		// docs: a FIFO queue's DLQ is FIFO and a Standard queue's Standard.
		fdlq := e.createFIFO("fdlq.fifo", nil)
		_ = fdlq
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: src, Attributes: map[string]string{
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, queueARN("fdlq.fifo"))}})
		wantErrCodeIn(e.t, err, "InvalidParameterValue", "InvalidAttributeValue")
		fsrc := e.createFIFO("fsrc.fifo", nil)
		mixed := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, dlqArn)
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: fsrc, Attributes: map[string]string{"RedrivePolicy": mixed}})
		// AWS's wording, as its answers to Terraform show it, with two periods.
		wantErr(e.t, err, contract.ErrInvalidValue(mixed, "RedrivePolicy", "Dead-letter queue must be same type of queue as the source.."))
		// validated test_dead_letter_queue_config: on CreateQueue too.
		e.create("src2", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":50}`, dlqArn)})
	})

	s.test(t, "RedrivePolicyNormalised", func(e *env) {
		// AWS (observed) keeps a RedrivePolicy normalised: compact JSON,
		// deadLetterTargetArn then maxReceiveCount, the count a number
		// (also validated test_get_specific_queue_attribute_response).
		e.create("dlq", nil)
		dlqArn := queueARN("dlq")
		want := `{"deadLetterTargetArn":"` + dlqArn + `","maxReceiveCount":5}`
		written := fmt.Sprintf(`{ "maxReceiveCount" : "5",
			"deadLetterTargetArn" : %q }`, dlqArn)
		src := e.create("src", map[string]string{"RedrivePolicy": written})
		if got := e.attrs(src, "RedrivePolicy")["RedrivePolicy"]; got != want {
			e.t.Errorf("RedrivePolicy = %s, want %s", got, want)
		}
		// CreateQueue compares it by meaning: the same policy written
		// another way is no conflict, another count is.
		for _, same := range []string{want, written, fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, dlqArn),
			fmt.Sprintf(`{"maxReceiveCount":5,"deadLetterTargetArn":%q}`, dlqArn)} {
			if again := e.create("src", map[string]string{"RedrivePolicy": same}); again != src {
				e.t.Errorf("CreateQueue with %s = %s, want %s", same, again, src)
			}
		}
		_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "src",
			Attributes: map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":6}`, dlqArn)}})
		wantErr(e.t, err, contract.ErrQueueNameExists("RedrivePolicy"))
		e.setAttrs(src, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn": %q, "maxReceiveCount": 7}`, dlqArn)})
		if got, want := e.attrs(src, "All")["RedrivePolicy"], `{"deadLetterTargetArn":"`+dlqArn+`","maxReceiveCount":7}`; got != want {
			e.t.Errorf("RedrivePolicy after SetQueueAttributes = %s, want %s", got, want)
		}
	})

	s.test(t, "RedriveAllowPolicy", func(e *env) {
		dlq := e.create("dlq", nil)
		a := e.create("a", nil)
		b := e.create("b", nil)
		policy := func(n int) map[string]string {
			return map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, queueARN("dlq"), n)}
		}
		setErr := func(url string, attrs map[string]string) error {
			_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: attrs})
			return err
		}
		// docs: denyAll / byQueue / allowAll (default).
		e.setAttrs(dlq, map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
		var rap map[string]any
		if err := json.Unmarshal([]byte(e.attrs(dlq, "RedriveAllowPolicy")["RedriveAllowPolicy"]), &rap); err != nil || rap["redrivePermission"] != "denyAll" {
			e.t.Errorf("RedriveAllowPolicy = %v (%v), want redrivePermission denyAll", rap, err)
		}
		wantErrCodeIn(e.t, setErr(a, policy(3)), "InvalidParameterValue", "InvalidAttributeValue")
		_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "c", Attributes: policy(3)})
		wantErrCodeIn(e.t, err, "InvalidParameterValue", "InvalidAttributeValue")
		e.setAttrs(dlq, map[string]string{"RedriveAllowPolicy": fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":[%q]}`, queueARN("a"))})
		e.setAttrs(a, policy(3))
		wantErrCodeIn(e.t, setErr(b, policy(3)), "InvalidParameterValue", "InvalidAttributeValue")
		if _, ok := e.attrs(b, "All")["RedrivePolicy"]; ok {
			e.t.Error("a denied RedrivePolicy was stored")
		}
		e.setAttrs(dlq, map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"allowAll"}`})
		e.setAttrs(b, policy(3))
		// Malformed allow policies are refused.
		for _, bad := range []string{`nope`, `{"redrivePermission":"sometimes"}`, `{"redrivePermission":"allowAll","sourceQueueArns":["x"]}`} {
			wantErrCodeIn(e.t, setErr(dlq, map[string]string{"RedriveAllowPolicy": bad}), "InvalidParameterValue", "InvalidAttributeValue")
		}
	})

	s.test(t, "Policy", func(e *env) {
		// validated test_set_queue_policy / test_set_empty_queue_policy.
		url := e.create("q", nil)
		e.setAttrs(url, map[string]string{"Policy": ""})
		if _, ok := e.attrs(url, "All")["Policy"]; ok {
			e.t.Error("Policy present after setting it empty")
		}
		pol := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sqs:SendMessage","Resource":%q}]}`, queueARN("q"))
		e.setAttrs(url, map[string]string{"Policy": pol})
		for _, names := range [][]string{{"All"}, {"Policy"}} {
			var p struct {
				Statement []struct{ Action any }
			}
			if err := json.Unmarshal([]byte(e.attrs(url, names...)["Policy"]), &p); err != nil || len(p.Statement) != 1 || p.Statement[0].Action != "sqs:SendMessage" {
				e.t.Errorf("Policy via %v = %+v (%v), want the statement set", names, p, err)
			}
		}
		e.setAttrs(url, map[string]string{"Policy": ""})
		if _, ok := e.attrs(url, "All")["Policy"]; ok {
			e.t.Error("Policy present after removing it")
		}
	})

	s.test(t, "PolicySize", func(e *env) {
		// docs (Amazon SQS policy quotas): a policy holds at most 8,192 bytes.
		url := e.create("q", nil)
		sized := func(n int) string {
			head := `{"Version":"2012-10-17","Id":"`
			return head + strings.Repeat("x", n-len(head)-2) + `"}`
		}
		e.setAttrs(url, map[string]string{"Policy": sized(8192)})
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"Policy": sized(8193)}})
		wantErr(e.t, err, contract.ErrInvalidAttributeValue("Invalid value for the parameter Policy."))
		if got := e.attrs(url, "Policy")["Policy"]; got != sized(8192) {
			e.t.Errorf("Policy after the refused change has %d bytes, want the 8,192 set before", len(got))
		}
	})

	s.test(t, "ServerSideEncryption", func(e *env) {
		// snapshot test_sse_queue_attributes.
		names := []string{"KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"}
		kms := e.create("kms", nil)
		e.setAttrs(kms, map[string]string{"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000", "SqsManagedSseEnabled": "false"})
		wantAttrs(e.t, e.attrs(kms, names...), map[string]string{"KmsDataKeyReusePeriodSeconds": "6000", "KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "false"})
		sse := e.create("sse", nil)
		e.setAttrs(sse, map[string]string{"SqsManagedSseEnabled": "true"})
		wantAttrs(e.t, e.attrs(sse, names...), map[string]string{"SqsManagedSseEnabled": "true"})
		// snapshot test_sse_kms_and_sqs_are_mutually_exclusive.
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: sse,
			Attributes: map[string]string{"KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "true"}})
		wantErr(e.t, err, contract.ErrInvalidAttributeName("You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE."))
		wantAttrs(e.t, e.attrs(sse, names...), map[string]string{"SqsManagedSseEnabled": "true"})
	})

	s.test(t, "ServerSideEncryptionDefaults", func(e *env) {
		// snapshot test_set_queue_attributes_default_values: setting a KMS
		// key turns SQS-managed SSE off; clearing the key does not turn it
		// back on, and the reuse period at its default is not listed.
		url := e.create("q", nil)
		e.setAttrs(url, map[string]string{"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"})
		a := e.attrs(url, "All")
		if a["KmsMasterKeyId"] != "testKeyId" || a["KmsDataKeyReusePeriodSeconds"] != "6000" || a["SqsManagedSseEnabled"] != "false" {
			e.t.Errorf("after setting a KMS key: KmsMasterKeyId %q, KmsDataKeyReusePeriodSeconds %q, SqsManagedSseEnabled %q; want testKeyId, 6000, false",
				a["KmsMasterKeyId"], a["KmsDataKeyReusePeriodSeconds"], a["SqsManagedSseEnabled"])
		}
		if len(a) != 14 {
			e.t.Errorf("All returned %d attributes, want 14: %v", len(a), a)
		}
		e.setAttrs(url, map[string]string{"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"})
		a = e.attrs(url, "All")
		_, hasKey := a["KmsMasterKeyId"]
		_, hasReuse := a["KmsDataKeyReusePeriodSeconds"]
		if hasKey || hasReuse || a["SqsManagedSseEnabled"] != "false" || len(a) != 12 {
			e.t.Errorf("after clearing the key: %v; want the 12 defaults with SqsManagedSseEnabled false", a)
		}
	})

	s.test(t, "Counts", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "a")
		e.send(url, "b")
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("later"), DelaySeconds: i64(5)})
		e.wantCounts(url, 2, 0, 1)
		m := e.recvOne(url) // 30 s visibility
		e.wantCounts(url, 1, 1, 1)
		e.clock.Advance(secs(6))
		e.wantCounts(url, 2, 1, 0)
		e.clock.Advance(secs(26))
		e.wantCounts(url, 3, 0, 0)
		got := e.recv(url, 10)
		if len(got) != 3 {
			e.t.Fatalf("received %d, want 3", len(got))
		}
		e.wantCounts(url, 0, 3, 0)
		for _, x := range got {
			e.del(url, x.ReceiptHandle)
		}
		_ = m
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "CountsFIFO", func(e *env) {
		// validated test_fifo_approximate_number_of_messages_not_visible:
		// only received messages count as not visible, not their groups.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		for i, g := range []string{"1", "1", "2", "2", "3", "3"} {
			e.sendFIFO(url, "message-"+strconv.Itoa(i+1), g, "")
		}
		e.wantCounts(url, 6, 0, 0)
		m1 := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1), WaitTimeSeconds: i64(0), MessageSystemAttributeNames: []string{"MessageGroupId"}})
		m2 := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1), WaitTimeSeconds: i64(0), MessageSystemAttributeNames: []string{"MessageGroupId"}})
		if len(m1) != 1 || len(m2) != 1 || m1[0].Attributes["MessageGroupId"] == m2[0].Attributes["MessageGroupId"] {
			e.t.Fatalf("two receives of one = %v, %v; want one message each from two different groups", m1, m2)
		}
		e.wantCounts(url, 4, 2, 0)
		e.clock.Advance(secs(31))
		e.wantCounts(url, 6, 0, 0)
	})
}
