package httpapi_test

// botocore signs differently from the Go SDK (its own canonicalisation in
// auth.py): boto3's client over AWS JSON 1.0, and botocore's SigV4Auth on a
// Query form POST as botocore before 1.32.7 sent them, against the handler
// with signature checks on.

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const botocoreScript = `
import json, os, sys, urllib.request, urllib.error
import boto3, botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

url = os.environ["SQS_URL"]
out = {}

def client(akid, secret, token=None, region="us-east-1"):
    return boto3.client("sqs", endpoint_url=url, region_name=region, aws_access_key_id=akid,
                        aws_secret_access_key=secret, aws_session_token=token,
                        config=botocore.config.Config(retries={"max_attempts": 1}))

good = client("AKIDHOME", "home/secret+key")
q = good.create_queue(QueueName="boto-q")["QueueUrl"]
good.send_message(QueueUrl=q, MessageBody="from  botocore  ü")
m = good.receive_message(QueueUrl=q, WaitTimeSeconds=1)["Messages"]
good.delete_message(QueueUrl=q, ReceiptHandle=m[0]["ReceiptHandle"])
out["json_ok"] = m[0]["Body"]
client("ASIATEMP", "temp-secret", "IQoJb3JpZ2luX2VjEXAMPLE+/=").list_queues()
out["json_token_ok"] = True

def code(c, **kw):
    try:
        c.list_queues(**kw)
        return "no error"
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"] + " " + str(e.response["ResponseMetadata"]["HTTPStatusCode"])

out["json_wrong_secret"] = code(client("AKIDHOME", "guessed"))
out["json_unknown_key"] = code(client("AKIDNOBODY", "x"))
out["json_wrong_region"] = code(client("AKIDHOME", "home/secret+key", region="eu-west-1"))

def query(akid, secret, params):
    body = "&".join(k + "=" + urllib.parse.quote(v, safe="-_.~") for k, v in params)
    req = AWSRequest(method="POST", url=url + "/", data=body,
                     headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    SigV4Auth(Credentials(akid, secret), "sqs", "us-east-1").add_auth(req)
    p = req.prepare()
    r = urllib.request.Request(p.url, data=p.body.encode() if isinstance(p.body, str) else p.body,
                               headers=dict(p.headers), method="POST")
    try:
        with urllib.request.urlopen(r) as resp:
            return str(resp.status) + " " + resp.read().decode()
    except urllib.error.HTTPError as e:
        return str(e.code) + " " + e.read().decode()

out["query_ok"] = query("AKIDHOME", "home/secret+key",
    [("Action", "SendMessage"), ("QueueUrl", q), ("MessageBody", "a + b & c = d ~"), ("Version", "2012-11-05")])
out["query_wrong_secret"] = query("AKIDHOME", "guessed",
    [("Action", "CreateQueue"), ("QueueName", "never"), ("Version", "2012-11-05")])
out["queues"] = good.list_queues().get("QueueUrls", [])
print(json.dumps(out))
`

func TestSigV4Botocore(t *testing.T) {
	if err := exec.Command("python3", "-c", "import boto3, botocore").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with boto3 is needed: %v", err)
		}
		t.Skipf("python3 with boto3 not found (%v); install python3-boto3 to run this test", err)
	}
	srv := newSignedServer(t)
	cmd := exec.Command("python3", "-c", botocoreScript)
	// The machine's AWS settings stay out of it.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SQS_URL="+srv.URL, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	b, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("botocore: %v\n%s\n%s", err, b, stderr)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for k, want := range map[string]string{
		"json_ok":           "from  botocore  ü",
		"json_wrong_secret": "SignatureDoesNotMatch 403",
		"json_unknown_key":  "InvalidClientTokenId 403",
		"json_wrong_region": "SignatureDoesNotMatch 403",
	} {
		if out[k] != want {
			t.Errorf("%s = %v, want %q", k, out[k], want)
		}
	}
	if out["json_token_ok"] != true {
		t.Errorf("session token: %v", out["json_token_ok"])
	}
	if s, _ := out["query_ok"].(string); !strings.HasPrefix(s, "200 ") || !strings.Contains(s, "<MessageId>") {
		t.Errorf("Query SendMessage signed by botocore: %v", out["query_ok"])
	}
	if s, _ := out["query_wrong_secret"].(string); !strings.HasPrefix(s, "403 ") || !strings.Contains(s, "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("Query with a wrong secret: %v", out["query_wrong_secret"])
	}
	if qs, _ := out["queues"].([]any); len(qs) != 1 {
		t.Errorf("queues %v: the refused CreateQueue made one", out["queues"])
	}
}
