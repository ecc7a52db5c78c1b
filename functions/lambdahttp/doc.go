// Package lambdahttp runs an http.Handler as an AWS Lambda function: it
// turns each HTTP event that a Lambda front end sends into an
// *http.Request, serves it with the handler and turns what the handler
// wrote into the response event that front end expects. sluice's Lambda
// binary (functions/cmd/sluice-lambda) serves the app's handler with it,
// so the function answers exactly what `sluice serve` answers.
//
// Four front ends, told apart by the shape of the event:
//
//   - Lambda function URLs and API Gateway HTTP APIs, payload format 2.0
//     ("version": "2.0", requestContext.http);
//   - API Gateway REST APIs (and HTTP APIs set to payload 1.0): httpMethod,
//     path, headers and multiValueHeaders, queryStringParameters and
//     multiValueQueryStringParameters;
//   - Application Load Balancer target groups (requestContext.elb), with
//     multi-value headers on or off; the answer uses the same mode, as the
//     load balancer requires.
//
// An EventBridge scheduled event ("source": "aws.events") runs
// Options.Scheduled instead.
//
// What the adapter keeps of the request is what a Signature V4 covers and
// what queue URLs are made of: the path and query as the client sent them
// (2.0's rawPath and rawQueryString; a REST API's requestContext.path,
// stage included, and its decoded parameters encoded again; an ALB's path
// and parameters, which the load balancer passes on still
// percent-encoded), every header value, cookies (2.0 carries them apart),
// the body (decoded when isBase64Encoded), and the host the client
// addressed (the Host header, else requestContext.domainName) with
// X-Forwarded-Proto, so that the queue URLs the service returns are the
// public endpoint's. API Gateway and function URLs are HTTPS only: when
// their event has no X-Forwarded-Proto the adapter says https.
//
// The response is buffered, not streamed: the handler writes into memory
// and the whole body goes back in the response event, as text when it is
// valid UTF-8 (every SQS answer is) and base64 otherwise. Lambda caps that
// event (6 MB for a synchronous invocation, 1 MB behind an ALB), so a
// ReceiveMessage answer near those sizes fails at the front end; see
// docs/lambda.md.
//
// The adapter is written here rather than taken from
// github.com/awslabs/aws-lambda-go-api-proxy (v0.16.2), which gets these
// wrong for SQS traffic: for an ALB event it escapes the query parameters
// again although the load balancer passes them on still percent-encoded
// (a QueueUrl parameter reaches the handler as "http%3A%2F%2F..."); with
// multi-value headers on it reads the host from the single-value headers
// only, so the request has no Host and queue URLs have no host; for a 2.0
// event it splits every header value that is not on its own list at
// commas; and a handler that writes nothing gets an error, not a 200.
//
// Lambda freezes the process between invocations, and may end it while
// frozen. A request must therefore finish everything it acknowledges
// before the handler returns; sluice's service already does (a send
// publishes its wake-ups before it answers; see stores/wake), so nothing
// here runs after the response. Goroutines that live across invocations,
// such as a wake-up transport's listener, simply pause while frozen and
// catch up when thawed; a long poll exists only inside an invocation, when
// they run.
package lambdahttp
