package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

// Cases of the permission and attribute checks, each with its evidence of
// what AWS does.

func testPermissionLimits(t *testing.T, s suite) {
	s.test(t, "AddPermissionActionLimit", func(e *env) {
		// docs (AddPermission, botocore model): "An Amazon SQS policy can
		// have a maximum of seven actions per statement." AddPermission
		// writes one statement holding all its actions; the limit is an
		// OverLimit (403) as the same rule answers on SetQueueAttributes
		// (see PolicyActionLimit).
		url := e.create("perm", nil)
		eight := []string{"SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility",
			"GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue"}
		_, err := e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: "eight",
			AWSAccountIds: []string{AccountID}, Actions: eight})
		wantErrCode(e.t, err, "OverLimit", 403)
		if _, ok := e.attrs(url, "Policy")["Policy"]; ok {
			e.t.Error("a refused AddPermission wrote a Policy")
		}
		// Seven is allowed.
		_, err = e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: "seven",
			AWSAccountIds: []string{AccountID}, Actions: eight[:7]})
		wantOK(e.t, err, "AddPermission with 7 actions")
	})

	s.test(t, "AddPermissionStatementLimit", func(e *env) {
		// docs (Amazon SQS policy quotas): Statements, maximum 20. docs
		// (OverLimit, botocore model): "AddPermission returns this error if
		// the maximum number of permissions for the queue is reached."
		url := e.create("perm", nil)
		for i := 1; i <= 20; i++ {
			_, err := e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: fmt.Sprintf("label%d", i),
				AWSAccountIds: []string{AccountID}, Actions: []string{"SendMessage"}})
			wantOK(e.t, err, fmt.Sprintf("AddPermission %d", i))
		}
		_, err := e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: "label21",
			AWSAccountIds: []string{AccountID}, Actions: []string{"SendMessage"}})
		wantErrCode(e.t, err, "OverLimit", 403)
	})

	s.test(t, "AddPermissionNonAccountPrincipal", func(e *env) {
		// docs (AddPermission): "Amazon SQS AddPermission does not support
		// adding a non-account principal." Real AWS (aws/aws-cli#7416):
		// "An error occurred (InvalidParameterValue) when calling the
		// AddPermission operation: Value [Arn] for parameter PrincipalId is
		// invalid. Reason: Unable to verify principal."
		url := e.create("perm", nil)
		principal := "arn:aws:iam::" + AccountID + ":user/alice"
		_, err := e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: "user",
			AWSAccountIds: []string{principal}, Actions: []string{"SendMessage"}})
		got := wantErrCode(e.t, err, "InvalidParameterValue", 400)
		if got.Code != "" && !strings.HasSuffix(got.Message, "for parameter PrincipalId is invalid. Reason: Unable to verify principal.") {
			e.t.Errorf("error message = %q, want it to end %q", got.Message, "for parameter PrincipalId is invalid. Reason: Unable to verify principal.")
		}
		if p, ok := e.attrs(url, "Policy")["Policy"]; ok {
			e.t.Errorf("a refused AddPermission wrote a Policy: %s", p)
		}
	})
}

func testAttributeErrors(t *testing.T, s suite) {
	s.test(t, "PolicyActionLimit", func(e *env) {
		// Real AWS, via Terraform (ministryofjustice/cloud-platform-environments#9082):
		// "error setting SQS Queue Policy (https://sqs.eu-west-2.amazonaws.com/...):
		// OverLimit: 10 actions were found in a statement from the submitted
		// policy, max allowed is 7". docs (AddPermission): "An Amazon SQS
		// policy can have a maximum of seven actions per statement."
		url := e.create("q", nil)
		actions := []string{"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
			"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ListDeadLetterSourceQueues", "sqs:PurgeQueue",
			"sqs:ListQueueTags", "sqs:SendMessageBatch"}
		quoted := make([]string, len(actions))
		for i, a := range actions {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		pol := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":[%s],"Resource":%q}]}`,
			strings.Join(quoted, ","), queueARN("q"))
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"Policy": pol}})
		wantErrPrefix(e.t, err, "OverLimit", 403, "10 actions were found in a statement from the submitted policy, max allowed is 7")
		if p, ok := e.attrs(url, "Policy")["Policy"]; ok {
			e.t.Errorf("a refused Policy was stored: %s", p)
		}
	})

	s.test(t, "RedrivePolicyEmptyMap", func(e *env) {
		// Real AWS (ansible-collections/community.aws#2321): "An error
		// occurred (InvalidParameterValue) when calling the
		// SetQueueAttributes operation: Value {} for parameter RedrivePolicy
		// is invalid. Reason: Redrive policy does not contain mandatory
		// attribute: maxReceiveCount." AWS checks maxReceiveCount first.
		url := e.create("q", nil)
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"RedrivePolicy": "{}"}})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Value {} for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: maxReceiveCount."))
	})
}
