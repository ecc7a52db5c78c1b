#!/usr/bin/env python3
"""Regenerates botocore_query_requests.json: sample inputs of every SQS
action serialized by botocore's own Query serializer over the last Query
model (botocore 1.32.6), so that the Go decoder is checked against the
serializer real clients used.

usage: python3 gen_botocore_query.py /path/to/botocore-sqs-2012-11-05-query-1.32.6.service-2.json
"""
import base64
import json
import sys

from botocore.model import ServiceModel
from botocore.serialize import create_serializer

model = ServiceModel(json.load(open(sys.argv[1])), "sqs")
ser = create_serializer("query", include_validation=True)

Q = "http://localhost:9324/000000000000/q1"
B = b"\x00\x01binary\xff"
samples = [
    ("AddPermission", {"QueueUrl": Q, "Label": "l1", "AWSAccountIds": ["111111111111", "222222222222"],
                       "Actions": ["SendMessage", "ReceiveMessage"]}),
    ("CancelMessageMoveTask", {"TaskHandle": "h1"}),
    ("ChangeMessageVisibility", {"QueueUrl": Q, "ReceiptHandle": "r+/=1", "VisibilityTimeout": 0}),
    ("ChangeMessageVisibilityBatch", {"QueueUrl": Q, "Entries": [
        {"Id": "a", "ReceiptHandle": "r1", "VisibilityTimeout": 10},
        {"Id": "b", "ReceiptHandle": "r2"}]}),
    ("CreateQueue", {"QueueName": "q1.fifo", "Attributes": {"FifoQueue": "true", "VisibilityTimeout": "40"},
                     "tags": {"team": "core", "empty": ""}}),
    ("DeleteMessage", {"QueueUrl": Q, "ReceiptHandle": "r1"}),
    ("DeleteMessageBatch", {"QueueUrl": Q, "Entries": [{"Id": "a", "ReceiptHandle": "r1"},
                                                       {"Id": "b", "ReceiptHandle": "r2"}]}),
    ("DeleteQueue", {"QueueUrl": Q}),
    ("GetQueueAttributes", {"QueueUrl": Q, "AttributeNames": ["All", "VisibilityTimeout"]}),
    ("GetQueueUrl", {"QueueName": "q1", "QueueOwnerAWSAccountId": "000000000000"}),
    ("ListDeadLetterSourceQueues", {"QueueUrl": Q, "NextToken": "t", "MaxResults": 5}),
    ("ListMessageMoveTasks", {"SourceArn": "arn:aws:sqs:us-east-1:000000000000:dlq", "MaxResults": 2}),
    ("ListQueueTags", {"QueueUrl": Q}),
    ("ListQueues", {"QueueNamePrefix": "q", "NextToken": "t", "MaxResults": 10}),
    ("ListQueues", {}),
    ("PurgeQueue", {"QueueUrl": Q}),
    ("ReceiveMessage", {"QueueUrl": Q, "AttributeNames": ["All"], "MessageAttributeNames": ["a", "b.*"],
                        "MaxNumberOfMessages": 10, "VisibilityTimeout": 5, "WaitTimeSeconds": 1,
                        "ReceiveRequestAttemptId": "att"}),
    ("RemovePermission", {"QueueUrl": Q, "Label": "l1"}),
    ("SendMessage", {"QueueUrl": Q, "MessageBody": "b\u00e9 +&=%\r\n\t<x/> \U0001F600", "DelaySeconds": 3,
                     "MessageAttributes": {
                         "s": {"DataType": "String", "StringValue": "v"},
                         "n": {"DataType": "Number.int", "StringValue": "12"},
                         "b": {"DataType": "Binary", "BinaryValue": B},
                         "e": {"DataType": "String", "StringValue": ""},
                     },
                     "MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-a"}},
                     "MessageDeduplicationId": "d", "MessageGroupId": "g"}),
    ("SendMessageBatch", {"QueueUrl": Q, "Entries": [
        {"Id": "a", "MessageBody": "one", "DelaySeconds": 1,
         "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"},
                               "bin": {"DataType": "Binary", "BinaryValue": B}},
         "MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-b"}}},
        {"Id": "b", "MessageBody": "two", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
    ] + [{"Id": "e%d" % i, "MessageBody": "m%d" % i} for i in range(3, 11)]}),
    ("SetQueueAttributes", {"QueueUrl": Q, "Attributes": {"Policy": '{"Version":"2012-10-17"}', "DelaySeconds": "0"}}),
    ("StartMessageMoveTask", {"SourceArn": "arn:aws:sqs:us-east-1:000000000000:dlq",
                              "DestinationArn": "arn:aws:sqs:us-east-1:000000000000:q1",
                              "MaxNumberOfMessagesPerSecond": 50}),
    ("TagQueue", {"QueueUrl": Q, "Tags": {"a": "1", "b": "2"}}),
    ("UntagQueue", {"QueueUrl": Q, "TagKeys": ["a", "b"]}),
]


def to_json(v):
    # blobs as base64, the way the JSON protocol (and the Go contract) has them
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    return v


out = []
for action, params in samples:
    req = ser.serialize_to_request(params, model.operation_model(action))
    body = req["body"]
    if isinstance(body, dict):
        from urllib.parse import urlencode
        body = urlencode(body)
    out.append({"action": action, "input": to_json(params), "body": body})
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
print()
