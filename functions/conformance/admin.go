package conformance

import (
	"encoding/json"
	"maps"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func testPurge(t *testing.T, s suite) {
	s.test(t, "RemovesEverything", func(e *env) {
		// validated test_purge_queue, test_purge_queue_deletes_inflight_messages
		// and test_purge_queue_deletes_delayed_messages.
		url := e.create("q", nil)
		for _, b := range []string{"a", "b", "c"} {
			e.send(url, b)
		}
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("delayed"), DelaySeconds: i64(2)})
		e.recvVT(url, 1, 3)
		e.wantCounts(url, 2, 1, 1)
		_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		e.wantCounts(url, 0, 0, 0)
		e.clock.Advance(secs(4))
		e.wantEmpty(url)
		// Messages sent after the purge stay.
		for _, b := range []string{"x", "y", "z"} {
			e.send(url, b)
		}
		wantBodySet(e.t, e.recv(url, 10), "x", "y", "z")
	})

	s.test(t, "OncePerMinute", func(e *env) {
		// snapshot test_successive_purge_calls_fail (403, the queue's name in the text).
		url := e.create("test-queue-purge", nil)
		other := e.create("other", nil)
		_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		e.send(url, "kept")
		e.clock.Advance(secs(59))
		_, err = e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantErr(e.t, err, &contract.Error{Code: "AWS.SimpleQueueService.PurgeQueueInProgress", Type: "PurgeQueueInProgress", Status: 403, Sender: true,
			Message: "Only one PurgeQueue operation on test-queue-purge is allowed every 60 seconds."})
		e.wantCounts(url, 1, 0, 0) // the refused purge removed nothing
		_, err = e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: other})
		wantOK(e.t, err, "PurgeQueue of another queue")
		e.clock.Advance(secs(2))
		_, err = e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue after 61 s")
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "ClearsDeduplication", func(e *env) {
		// validated test_purge_queue_clears_fifo_deduplication_cache.
		url := e.createFIFO("f.fifo", nil)
		e.sendFIFO(url, "message-1", "g", "dedup")
		_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		e.sendFIFO(url, "message-2", "g", "dedup")
		wantBodies(e.t, e.recv(url, 10), "message-2")
	})

	s.test(t, "FIFOGroupsFreed", func(e *env) {
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "old", "g", "")
		e.recvOne(url)
		_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		e.sendFIFO(url, "new", "g", "")
		wantBodies(e.t, e.recv(url, 10), "new")
	})
}

func testTags(t *testing.T, s suite) {
	list := func(e *env, url string) map[string]string {
		e.t.Helper()
		out, err := e.svc.ListQueueTags(e.op(), &contract.ListQueueTagsInput{QueueUrl: url})
		wantOK(e.t, err, "ListQueueTags")
		return out.Tags
	}
	tag := func(e *env, url string, tags map[string]string) {
		e.t.Helper()
		_, err := e.svc.TagQueue(e.op(), &contract.TagQueueInput{QueueUrl: url, Tags: tags})
		wantOK(e.t, err, "TagQueue")
	}
	untag := func(e *env, url string, keys ...string) {
		e.t.Helper()
		_, err := e.svc.UntagQueue(e.op(), &contract.UntagQueueInput{QueueUrl: url, TagKeys: keys})
		wantOK(e.t, err, "UntagQueue")
	}
	wantTags := func(e *env, got, want map[string]string) {
		e.t.Helper()
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !maps.Equal(got, want) {
			e.t.Errorf("tags = %v, want %v", got, want)
		}
	}

	s.test(t, "TagUntag", func(e *env) {
		// snapshot test_tag_untag_queue.
		url := e.create("q", nil)
		wantTags(e, list(e, url), nil)
		tag(e, url, map[string]string{"tag1": "value1", "tag2": "value2", "tag3": ""})
		wantTags(e, list(e, url), map[string]string{"tag1": "value1", "tag2": "value2", "tag3": ""})
		untag(e, url, "tag1", "tag3")
		wantTags(e, list(e, url), map[string]string{"tag2": "value2"})
		untag(e, url, "tag2")
		if got := list(e, url); len(got) != 0 {
			e.t.Errorf("tags after removing all = %v", got)
		}
	})

	s.test(t, "OverwriteCaseAndMissing", func(e *env) {
		// validated test_tags_case_sensitive, test_tag_queue_overwrites_existing_tag
		// and test_untag_queue_ignores_non_existing_tag.
		url := e.create("q", nil)
		tag(e, url, map[string]string{"MyTag": "value1", "mytag": "value2"})
		wantTags(e, list(e, url), map[string]string{"MyTag": "value1", "mytag": "value2"})
		tag(e, url, map[string]string{"MyTag": "VALUE1", "tag3": "value3"})
		wantTags(e, list(e, url), map[string]string{"MyTag": "VALUE1", "mytag": "value2", "tag3": "value3"})
		untag(e, url, "mytag", "nope")
		wantTags(e, list(e, url), map[string]string{"MyTag": "VALUE1", "tag3": "value3"})
		// Tags change no attribute.
		if got := e.attrs(url, "All"); len(got) != 12 {
			e.t.Errorf("attributes after tagging: %v", got)
		}
	})

	s.test(t, "LengthsInCharacters", func(e *env) {
		// docs (TagQueue): keys up to 128 Unicode characters, values up to
		// 256, whatever their bytes.
		url := e.create("q", nil)
		key, value := strings.Repeat("é", contract.MaxTagKeyLength), strings.Repeat("€", contract.MaxTagValueLength)
		tag(e, url, map[string]string{key: value})
		wantTags(e, list(e, url), map[string]string{key: value})
		_, err := e.svc.TagQueue(e.op(), &contract.TagQueueInput{QueueUrl: url, Tags: map[string]string{key + "é": ""}})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Tag keys must be between 1 and 128 characters in length."))
		_, err = e.svc.TagQueue(e.op(), &contract.TagQueueInput{QueueUrl: url, Tags: map[string]string{"k": value + "€"}})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Tag values may only be up to 256 characters in length."))
		wantTags(e, list(e, url), map[string]string{key: value})
	})

	s.test(t, "OnCreate", func(e *env) {
		// validated test_create_queue_with_tags.
		out, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "q", Tags: map[string]string{"tag1": "value1", "tag2": "value2"}})
		wantOK(e.t, err, "CreateQueue with tags")
		wantTags(e, list(e, out.QueueUrl), map[string]string{"tag1": "value1", "tag2": "value2"})
		out, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "f.fifo", Attributes: map[string]string{"FifoQueue": "true"}, Tags: map[string]string{"team": "x"}})
		wantOK(e.t, err, "CreateQueue FIFO with tags")
		wantTags(e, list(e, out.QueueUrl), map[string]string{"team": "x"})
	})
}

var iamAccountRE = regexp.MustCompile(`^arn:aws:iam::([0-9]{12}):`)

type policyDoc struct {
	Version   string
	Id        string
	Statement []struct {
		Sid       string
		Effect    string
		Principal struct{ AWS any }
		Action    any
		Resource  string
	}
}

func testPermissions(t *testing.T, s suite) {
	testPermissionLimits(t, s)

	s.test(t, "Lifecycle", func(e *env) {
		// snapshot test_sqs_permission_lifecycle.
		url := e.create("perm", nil)
		arn := queueARN("perm")
		add := func(label string, accounts ...string) error {
			_, err := e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: label, AWSAccountIds: accounts, Actions: []string{"ReceiveMessage"}})
			return err
		}
		remove := func(label string) error {
			_, err := e.svc.RemovePermission(e.op(), &contract.RemovePermissionInput{QueueUrl: url, Label: label})
			return err
		}
		policy := func() *policyDoc {
			e.t.Helper()
			raw, ok := e.attrs(url, "Policy")["Policy"]
			if !ok {
				return nil
			}
			var p policyDoc
			if err := json.Unmarshal([]byte(raw), &p); err != nil {
				e.t.Fatalf("Policy is not JSON: %v: %s", err, raw)
			}
			return &p
		}
		// check compares the statements (Sid -> accounts) of the policy.
		check := func(want map[string][]string) {
			e.t.Helper()
			p := policy()
			if p == nil {
				if len(want) != 0 {
					e.t.Errorf("no Policy, want statements %v", want)
				}
				return
			}
			if len(want) == 0 {
				e.t.Errorf("Policy present, want none: %+v", p)
				return
			}
			if p.Version != "2008-10-17" || !strings.HasPrefix(p.Id, arn+"/") {
				e.t.Errorf("Policy Version %q, Id %q; want 2008-10-17 and %s/…", p.Version, p.Id, arn)
			}
			got := map[string][]string{}
			for _, st := range p.Statement {
				if st.Effect != "Allow" || st.Action != "SQS:ReceiveMessage" || st.Resource != arn {
					e.t.Errorf("statement %s: Effect %q, Action %v, Resource %q; want Allow, SQS:ReceiveMessage, %s", st.Sid, st.Effect, st.Action, st.Resource, arn)
				}
				var principals []string
				switch v := st.Principal.AWS.(type) {
				case string: // one account: a plain string
					principals = []string{v}
				case []any:
					if len(v) < 2 {
						e.t.Errorf("statement %s: a list of %d principals, want a plain string for one", st.Sid, len(v))
					}
					for _, x := range v {
						s, _ := x.(string)
						principals = append(principals, s)
					}
				}
				var accounts []string
				for _, pr := range principals {
					m := iamAccountRE.FindStringSubmatch(pr)
					if m == nil {
						e.t.Errorf("statement %s: principal %q is not an IAM account ARN", st.Sid, pr)
						continue
					}
					accounts = append(accounts, m[1])
				}
				sort.Strings(accounts)
				got[st.Sid] = accounts
			}
			if len(got) != len(want) {
				e.t.Errorf("statements = %v, want %v", got, want)
			}
			for sid, acc := range want {
				sort.Strings(acc)
				if !equalStrings(got[sid], acc) {
					e.t.Errorf("statement %s accounts = %v, want %v", sid, got[sid], acc)
				}
			}
		}
		wantOK(e.t, add("crossaccountpermission", AccountID, "668614515564"), "AddPermission")
		check(map[string][]string{"crossaccountpermission": {AccountID, "668614515564"}})
		wantOK(e.t, remove("crossaccountpermission"), "RemovePermission")
		check(nil)
		wantOK(e.t, add("crossaccountpermission", AccountID), "AddPermission")
		check(map[string][]string{"crossaccountpermission": {AccountID}})
		wantErr(e.t, add("crossaccountpermission", "668614515564"),
			contract.ErrInvalidParameterValue("Value crossaccountpermission for parameter Label is invalid. Reason: Already exists."))
		wantOK(e.t, add("crossaccountpermission2", AccountID), "AddPermission second label")
		check(map[string][]string{"crossaccountpermission": {AccountID}, "crossaccountpermission2": {AccountID}})
		wantOK(e.t, remove("crossaccountpermission"), "RemovePermission first")
		check(map[string][]string{"crossaccountpermission2": {AccountID}})
		wantOK(e.t, remove("crossaccountpermission2"), "RemovePermission second")
		check(nil)
		wantErr(e.t, remove("crossaccountpermission2"),
			contract.ErrInvalidParameterValue("Value crossaccountpermission2 for parameter Label is invalid. Reason: can't find label."))
	})
}
