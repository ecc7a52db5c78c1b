// Package contract is the SQS API as data: the request and response shapes of
// every action, the limits and defaults, the error catalogue, validation and
// the MD5 digests. It knows nothing of HTTP or of storage.
//
// Field names follow the AWS JSON 1.0 protocol exactly, so a JSON request
// body decodes straight into these types; the Query protocol decoder fills
// the same types from form parameters.
package contract

// MessageAttributeValue is a user or system message attribute.
type MessageAttributeValue struct {
	StringValue      *string  `json:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
	DataType         string   `json:"DataType"`
}

type AddPermissionInput struct {
	QueueUrl      string
	Label         string
	AWSAccountIds []string
	Actions       []string
}

type CancelMessageMoveTaskInput struct {
	TaskHandle string
}

type CancelMessageMoveTaskOutput struct {
	ApproximateNumberOfMessagesMoved int64
}

type ChangeMessageVisibilityInput struct {
	QueueUrl          string
	ReceiptHandle     string
	VisibilityTimeout *int64
}

type ChangeMessageVisibilityBatchRequestEntry struct {
	Id                string
	ReceiptHandle     string
	VisibilityTimeout *int64
}

type ChangeMessageVisibilityBatchInput struct {
	QueueUrl string
	Entries  []ChangeMessageVisibilityBatchRequestEntry
}

// BatchResultErrorEntry reports one failed entry of a batch action.
type BatchResultErrorEntry struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string `json:",omitempty"`
}

// BatchResultEntry reports one successful entry of a delete or
// change-visibility batch.
type BatchResultEntry struct {
	Id string
}

type ChangeMessageVisibilityBatchOutput struct {
	Successful []BatchResultEntry      `json:",omitempty"`
	Failed     []BatchResultErrorEntry `json:",omitempty"`
}

type CreateQueueInput struct {
	QueueName  string
	Attributes map[string]string `json:",omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
}

type CreateQueueOutput struct {
	QueueUrl string `json:",omitempty"`
}

type DeleteMessageInput struct {
	QueueUrl      string
	ReceiptHandle string
}

type DeleteMessageBatchRequestEntry struct {
	Id            string
	ReceiptHandle string
}

type DeleteMessageBatchInput struct {
	QueueUrl string
	Entries  []DeleteMessageBatchRequestEntry
}

type DeleteMessageBatchOutput struct {
	Successful []BatchResultEntry      `json:",omitempty"`
	Failed     []BatchResultErrorEntry `json:",omitempty"`
}

type DeleteQueueInput struct {
	QueueUrl string
}

type GetQueueAttributesInput struct {
	QueueUrl       string
	AttributeNames []string
}

type GetQueueAttributesOutput struct {
	Attributes map[string]string `json:",omitempty"`
}

type GetQueueUrlInput struct {
	QueueName              string
	QueueOwnerAWSAccountId string `json:",omitempty"`
}

type GetQueueUrlOutput struct {
	QueueUrl string `json:",omitempty"`
}

type ListDeadLetterSourceQueuesInput struct {
	QueueUrl   string
	NextToken  *string
	MaxResults *int64
}

type ListDeadLetterSourceQueuesOutput struct {
	QueueUrls []string `json:"queueUrls"`
	NextToken string   `json:",omitempty"`
}

type ListMessageMoveTasksInput struct {
	SourceArn  string
	MaxResults *int64
}

type ListMessageMoveTasksResultEntry struct {
	TaskHandle                        string `json:",omitempty"`
	Status                            string `json:",omitempty"`
	SourceArn                         string `json:",omitempty"`
	DestinationArn                    string `json:",omitempty"`
	MaxNumberOfMessagesPerSecond      *int64 `json:",omitempty"`
	ApproximateNumberOfMessagesMoved  int64
	ApproximateNumberOfMessagesToMove *int64 `json:",omitempty"`
	FailureReason                     string `json:",omitempty"`
	StartedTimestamp                  int64
}

type ListMessageMoveTasksOutput struct {
	Results []ListMessageMoveTasksResultEntry `json:",omitempty"`
}

type ListQueueTagsInput struct {
	QueueUrl string
}

type ListQueueTagsOutput struct {
	Tags map[string]string `json:",omitempty"`
}

type ListQueuesInput struct {
	QueueNamePrefix string
	NextToken       *string
	MaxResults      *int64
}

type ListQueuesOutput struct {
	QueueUrls []string `json:",omitempty"`
	NextToken string   `json:",omitempty"`
}

type PurgeQueueInput struct {
	QueueUrl string
}

type ReceiveMessageInput struct {
	QueueUrl                    string
	AttributeNames              []string
	MessageSystemAttributeNames []string
	MessageAttributeNames       []string
	MaxNumberOfMessages         *int64
	VisibilityTimeout           *int64
	WaitTimeSeconds             *int64
	ReceiveRequestAttemptId     *string
}

// Message is one message as ReceiveMessage returns it.
type Message struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string                `json:",omitempty"`
	MD5OfMessageAttributes string                           `json:",omitempty"`
	MessageAttributes      map[string]MessageAttributeValue `json:",omitempty"`
}

type ReceiveMessageOutput struct {
	Messages []Message `json:",omitempty"`
}

type RemovePermissionInput struct {
	QueueUrl string
	Label    string
}

type SendMessageInput struct {
	QueueUrl                string
	MessageBody             *string
	DelaySeconds            *int64
	MessageAttributes       map[string]MessageAttributeValue
	MessageSystemAttributes map[string]MessageAttributeValue
	MessageDeduplicationId  *string
	MessageGroupId          *string
}

type SendMessageOutput struct {
	MD5OfMessageBody             string `json:",omitempty"`
	MD5OfMessageAttributes       string `json:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty"`
	MessageId                    string `json:",omitempty"`
	SequenceNumber               string `json:",omitempty"`
}

type SendMessageBatchRequestEntry struct {
	Id                      string
	MessageBody             *string
	DelaySeconds            *int64
	MessageAttributes       map[string]MessageAttributeValue
	MessageSystemAttributes map[string]MessageAttributeValue
	MessageDeduplicationId  *string
	MessageGroupId          *string
}

type SendMessageBatchInput struct {
	QueueUrl string
	Entries  []SendMessageBatchRequestEntry
}

type SendMessageBatchResultEntry struct {
	Id                           string
	MessageId                    string
	MD5OfMessageBody             string
	MD5OfMessageAttributes       string `json:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty"`
	SequenceNumber               string `json:",omitempty"`
}

// SendMessageBatchOutput, like the other batch outputs, leaves empty lists
// out of JSON, as AWS does (a fully successful batch has no Failed member).
type SendMessageBatchOutput struct {
	Successful []SendMessageBatchResultEntry `json:",omitempty"`
	Failed     []BatchResultErrorEntry       `json:",omitempty"`
}

type SetQueueAttributesInput struct {
	QueueUrl   string
	Attributes map[string]string
}

type StartMessageMoveTaskInput struct {
	SourceArn                    string
	DestinationArn               *string
	MaxNumberOfMessagesPerSecond *int64
}

type StartMessageMoveTaskOutput struct {
	TaskHandle string `json:",omitempty"`
}

type TagQueueInput struct {
	QueueUrl string
	Tags     map[string]string
}

type UntagQueueInput struct {
	QueueUrl string
	TagKeys  []string
}

// Empty is the output of actions that return no result members.
type Empty struct{}
