#!/usr/bin/env python3
"""Client scenario list for sluice, driven by boto3.

The same file runs under two interpreters (see infra/clients/run.sh):

  * the pyenv Python with boto3/botocore 1.43, whose SQS model speaks the
    JSON protocol (awsQueryCompatible);
  * Debian's /usr/bin/python3 with python3-boto3 (botocore 1.29), whose SQS
    model speaks the Query protocol.

It prints one "PASS name" or "FAIL name: why" line per check, then
"<label>: N passed, N failed", and exits 1 when any check failed.

Usage: check.py --endpoint http://127.0.0.1:PORT --label py-json --expect-protocol json
"""

import argparse
import base64
import hashlib
import os
import random
import struct
import sys
import threading
import time
import traceback

try:
    import boto3
    import botocore
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError as exc:  # reported as a failed check, not a traceback
    print(f"FAIL import boto3: {exc} (interpreter {sys.executable})")
    print("python: 0 passed, 1 failed")
    sys.exit(1)


# ---------------------------------------------------------------------------
# Digests, written from AWS's description of them.

def md5_hex(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.md5(data).hexdigest()


def md5_of_message_attributes(attrs):
    """MD5OfMessageAttributes as SQS computes it.

    Attributes are taken in order of name; each contributes its name, its
    DataType, a transport byte (1 for a string value, String and Number
    types; 2 for a binary value) and its value, every variable part preceded
    by its length as a 4-byte big-endian integer.
    """
    h = hashlib.md5()

    def put(b):
        h.update(struct.pack(">I", len(b)))
        h.update(b)

    for name in sorted(attrs, key=lambda n: n.encode("utf-8")):
        a = attrs[name]
        put(name.encode("utf-8"))
        put(a["DataType"].encode("utf-8"))
        if a.get("BinaryValue") is not None:
            h.update(b"\x02")
            v = a["BinaryValue"]
            put(v if isinstance(v, (bytes, bytearray)) else base64.b64decode(v))
        else:
            h.update(b"\x01")
            put(a["StringValue"].encode("utf-8"))
    return h.hexdigest()


# The digest of a fixed set, worked out by hand from the description above,
# so that a wrong implementation here fails loudly instead of agreeing with a
# wrong server.
_SELFTEST_ATTRS = {"b": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
                   "a": {"DataType": "String", "StringValue": "x"}}
_SELFTEST_BYTES = (b"\x00\x00\x00\x01a" b"\x00\x00\x00\x06String" b"\x01" b"\x00\x00\x00\x01x"
                   b"\x00\x00\x00\x01b" b"\x00\x00\x00\x06Binary" b"\x02" b"\x00\x00\x00\x02\x00\xff")


# ---------------------------------------------------------------------------
# A tiny check runner.

class Failed(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Failed(msg)


def eq(got, want, what):
    if got != want:
        raise Failed(f"{what}: got {got!r}, want {want!r}")


class Runner:
    def __init__(self, label):
        self.label = label
        self.passed = 0
        self.failed = 0

    def check(self, name, fn, *args):
        try:
            fn(*args)
        except Failed as exc:
            self._fail(name, str(exc))
            return False
        except ClientError as exc:
            err = exc.response.get("Error", {})
            self._fail(name, f"{type(exc).__name__} {err.get('Code')}: {err.get('Message')}")
            return False
        except Exception as exc:  # anything else is a failure of the check too
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self._fail(name, detail)
            return False
        self.passed += 1
        print(f"PASS {name}", flush=True)
        return True

    def skip(self, name, why):
        print(f"SKIP {name}: {why}", flush=True)

    def _fail(self, name, why):
        self.failed += 1
        why = why.replace("\n", " | ")
        if len(why) > 400:
            why = why[:400] + "..."
        print(f"FAIL {name}: {why}", flush=True)


# ---------------------------------------------------------------------------

SPECIAL_BODIES = {
    "unicode": "héllo wörld ✓ 日本語 Ελληνικά 😀 \u00a0end",
    "xml characters": "<msg a=\"1\" b='2'>fish &amp; chips & peas</msg> ]]> &lt;",
    "CR LF": "line one\r\nline two\rline three\nline four\r\n",
    "tab and edges": "\t leading tab and trailing spaces   ",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--label", default="python")
    ap.add_argument("--expect-protocol", choices=["json", "query"], required=True)
    ap.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    args = ap.parse_args()

    r = Runner(args.label)
    ep = args.endpoint.rstrip("/")
    print(f"# {args.label}: python {sys.version.split()[0]} at {sys.executable}, "
          f"boto3 {boto3.__version__}, botocore {botocore.__version__}, endpoint {ep}", flush=True)

    cfg = Config(connect_timeout=5, read_timeout=30,
                 retries={"mode": "standard", "max_attempts": 3})

    def new_client(**kw):
        return boto3.session.Session().client("sqs", region_name=args.region, config=cfg, **kw)

    sqs = new_client(endpoint_url=ep)
    proto = sqs.meta.service_model.protocol
    print(f"# botocore service model protocol: {proto}", flush=True)

    def c_protocol():
        eq(proto, args.expect_protocol, "client.meta.service_model.protocol")
    r.check(f"protocol is {args.expect_protocol}", c_protocol)

    def c_selftest():
        eq(md5_of_message_attributes(_SELFTEST_ATTRS), hashlib.md5(_SELFTEST_BYTES).hexdigest(),
           "md5_of_message_attributes on the fixed set")
    r.check("harness self-test: message attribute digest", c_selftest)

    tag = f"{os.getpid()}{random.randrange(16**6):06x}"
    prefix = f"sluice-{args.label}-{tag}"
    names = {"std": f"{prefix}-std", "fifo": f"{prefix}-fifo.fifo", "poll": f"{prefix}-poll"}
    q = {}  # kind -> url

    # --- queues --------------------------------------------------------------
    def c_create_std():
        url = sqs.create_queue(QueueName=names["std"])["QueueUrl"]
        need(url.endswith("/" + names["std"]), f"queue URL {url!r} does not end with /{names['std']}")
        q["std"] = url
        q["poll"] = sqs.create_queue(QueueName=names["poll"])["QueueUrl"]
    r.check("create_queue (Standard)", c_create_std)

    def c_create_fifo():
        url = sqs.create_queue(QueueName=names["fifo"],
                               Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        need(url.endswith("/" + names["fifo"]), f"queue URL {url!r} does not end with /{names['fifo']}")
        q["fifo"] = url
    r.check("create_queue (FIFO, ContentBasedDeduplication)", c_create_fifo)

    def need_q(kind):
        need(kind in q, f"no {kind} queue (create_queue failed)")
        return q[kind]

    def c_create_idem():
        url = need_q("fifo")
        again = sqs.create_queue(QueueName=names["fifo"],
                                 Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        eq(again, url, "QueueUrl of a second create_queue with the same attributes")
    r.check("create_queue again with same attributes returns same URL", c_create_idem)

    def c_get_url():
        for kind in ("std", "fifo"):
            eq(sqs.get_queue_url(QueueName=names[kind])["QueueUrl"], need_q(kind), f"get_queue_url({names[kind]})")
    r.check("get_queue_url", c_get_url)

    def c_list():
        need_q("std"), need_q("fifo"), need_q("poll")
        got = sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
        eq(sorted(got), sorted(q.values()), f"list_queues(QueueNamePrefix={prefix!r})")
        none = sqs.list_queues(QueueNamePrefix=prefix + "-nothing-has-this").get("QueueUrls", [])
        eq(none, [], "list_queues with a prefix matching nothing")
    r.check("list_queues with prefix", c_list)

    # --- one message, full round trip ---------------------------------------------------
    body = "Hello <sluice> & friends ✓\r\nsecond line"
    attrs = {
        "str": {"DataType": "String", "StringValue": "value <&> é\r\n"},
        "num": {"DataType": "Number", "StringValue": "-12.5"},
        "bin": {"DataType": "Binary", "BinaryValue": b"\x00\x01\x02\xfe\xff binary"},
        "custom": {"DataType": "String.custom-type", "StringValue": "c"},
    }
    sent = {}

    def c_send():
        out = sqs.send_message(QueueUrl=need_q("std"), MessageBody=body, MessageAttributes=attrs)
        need(out.get("MessageId"), "no MessageId")
        eq(out.get("MD5OfMessageBody"), md5_hex(body), "MD5OfMessageBody")
        eq(out.get("MD5OfMessageAttributes"), md5_of_message_attributes(attrs), "MD5OfMessageAttributes")
        sent.update(out)
    r.check("send_message with String/Number/Binary attributes (MD5s)", c_send)

    received = {}

    def c_receive():
        need(sent, "nothing was sent")
        msgs = sqs.receive_message(QueueUrl=q["std"], MaxNumberOfMessages=1, WaitTimeSeconds=2,
                                   MessageAttributeNames=["All"], AttributeNames=["All"]).get("Messages", [])
        eq(len(msgs), 1, "number of messages received")
        m = msgs[0]
        eq(m["MessageId"], sent["MessageId"], "MessageId")
        eq(m["Body"], body, "Body")
        eq(m.get("MD5OfBody"), md5_hex(body), "MD5OfBody")
        eq(m.get("MessageAttributes"), attrs, "MessageAttributes")
        eq(m.get("MD5OfMessageAttributes"), md5_of_message_attributes(attrs), "MD5OfMessageAttributes")
        a = m.get("Attributes", {})
        for k in ("SentTimestamp", "ApproximateFirstReceiveTimestamp", "SenderId"):
            need(a.get(k), f"system attribute {k} missing from {sorted(a)}")
        eq(a.get("ApproximateReceiveCount"), "1", "ApproximateReceiveCount")
        need(m.get("ReceiptHandle"), "no ReceiptHandle")
        received.update(m)
    r.check("receive_message round trip (body, attributes, system attributes)", c_receive)

    def c_visibility():
        need(received, "nothing was received")
        sqs.change_message_visibility(QueueUrl=q["std"], ReceiptHandle=received["ReceiptHandle"],
                                      VisibilityTimeout=0)
        kw = {"AttributeNames": ["All"]}
        members = sqs.meta.service_model.operation_model("ReceiveMessage").input_shape.members
        if "MessageSystemAttributeNames" in members:  # newer models deprecate AttributeNames
            kw = {"MessageSystemAttributeNames": ["All"]}
        msgs = sqs.receive_message(QueueUrl=q["std"], MaxNumberOfMessages=1, WaitTimeSeconds=2,
                                   **kw).get("Messages", [])
        eq(len(msgs), 1, "messages received after VisibilityTimeout=0")
        eq(msgs[0]["MessageId"], sent["MessageId"], "MessageId")
        eq(msgs[0].get("Attributes", {}).get("ApproximateReceiveCount"), "2", "ApproximateReceiveCount")
        received["ReceiptHandle"] = msgs[0]["ReceiptHandle"]
    r.check("change_message_visibility (0 makes it visible again)", c_visibility)

    def c_delete():
        need(received, "nothing was received")
        sqs.delete_message(QueueUrl=q["std"], ReceiptHandle=received["ReceiptHandle"])
        a = sqs.get_queue_attributes(QueueUrl=q["std"], AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        eq(a.get("ApproximateNumberOfMessages"), "0", "ApproximateNumberOfMessages after delete")
        eq(a.get("ApproximateNumberOfMessagesNotVisible"), "0", "ApproximateNumberOfMessagesNotVisible after delete")
    r.check("delete_message", c_delete)

    # --- bodies with characters that need care ---------------------------------------------
    special_sent = {}

    def c_special_send():
        for what, b in SPECIAL_BODIES.items():
            out = sqs.send_message(QueueUrl=need_q("std"), MessageBody=b,
                                   MessageAttributes={"what": {"DataType": "String", "StringValue": b}})
            eq(out.get("MD5OfMessageBody"), md5_hex(b), f"MD5OfMessageBody ({what})")
            special_sent[out["MessageId"]] = what
    r.check("send bodies with unicode, <, &, CR LF", c_special_send)

    special_got = {}
    if special_sent:
        deadline = time.time() + 10
        while len(special_got) < len(special_sent) and time.time() < deadline:
            try:
                msgs = sqs.receive_message(QueueUrl=q["std"], MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                           MessageAttributeNames=["All"]).get("Messages", [])
            except ClientError:
                break
            for m in msgs:
                special_got[m["MessageId"]] = m
                try:
                    sqs.delete_message(QueueUrl=q["std"], ReceiptHandle=m["ReceiptHandle"])
                except ClientError:
                    pass
    for what, b in SPECIAL_BODIES.items():
        def c_special(what=what, b=b):
            ids = [i for i, w in special_sent.items() if w == what]
            need(ids, "not sent")
            m = special_got.get(ids[0])
            need(m is not None, "not received")
            eq(m["Body"], b, "Body")
            eq(m.get("MD5OfBody"), md5_hex(b), "MD5OfBody")
            eq(m.get("MessageAttributes", {}).get("what", {}).get("StringValue"), b, "String attribute value")
        r.check(f"round trip: {what}", c_special)

    # --- batches ------------------------------------------------------------------
    batch = [{"Id": f"e{i}", "MessageBody": f"batch body {i} <&>",
              "MessageAttributes": {"i": {"DataType": "Number", "StringValue": str(i)}}} for i in range(3)]
    batch_ids = {}

    def c_send_batch():
        out = sqs.send_message_batch(QueueUrl=need_q("std"), Entries=batch)
        eq(out.get("Failed", []), [], "Failed entries")
        ok = {e["Id"]: e for e in out.get("Successful", [])}
        eq(sorted(ok), [e["Id"] for e in batch], "Successful entry ids")
        for e in batch:
            eq(ok[e["Id"]].get("MD5OfMessageBody"), md5_hex(e["MessageBody"]), f"MD5OfMessageBody of {e['Id']}")
            eq(ok[e["Id"]].get("MD5OfMessageAttributes"), md5_of_message_attributes(e["MessageAttributes"]),
               f"MD5OfMessageAttributes of {e['Id']}")
            batch_ids[ok[e["Id"]]["MessageId"]] = e
    r.check("send_message_batch (3 entries)", c_send_batch)

    batch_got = {}

    def c_recv_batch():
        need(batch_ids, "nothing was sent")
        deadline = time.time() + 10
        while len(batch_got) < 3 and time.time() < deadline:
            for m in sqs.receive_message(QueueUrl=q["std"], MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                         MessageAttributeNames=["All"]).get("Messages", []):
                batch_got[m["MessageId"]] = m
        eq(sorted(batch_got), sorted(batch_ids), "MessageIds received")
        for mid, m in batch_got.items():
            e = batch_ids[mid]
            eq(m["Body"], e["MessageBody"], f"Body of {e['Id']}")
            eq(m.get("MessageAttributes"), e["MessageAttributes"], f"MessageAttributes of {e['Id']}")
    r.check("receive the batch (MaxNumberOfMessages=10)", c_recv_batch)

    def c_delete_batch():
        need(batch_got, "nothing was received")
        entries = [{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch_got.values())]
        out = sqs.delete_message_batch(QueueUrl=q["std"], Entries=entries)
        eq(out.get("Failed", []), [], "Failed entries")
        eq(sorted(e["Id"] for e in out.get("Successful", [])), sorted(e["Id"] for e in entries), "Successful ids")
    r.check("delete_message_batch", c_delete_batch)

    # --- FIFO ---------------------------------------------------------------------
    fifo_bodies = [f"fifo message {i} ✓" for i in range(5)]
    fifo_sent = []  # send_message outputs, in order

    def c_fifo_send():
        for b in fifo_bodies:
            out = sqs.send_message(QueueUrl=need_q("fifo"), MessageBody=b, MessageGroupId="group-1")
            fifo_sent.append(out)
            eq(out.get("MD5OfMessageBody"), md5_hex(b), "MD5OfMessageBody")
        seq = [o.get("SequenceNumber") for o in fifo_sent]
        need(all(seq), f"SendMessage on a FIFO queue returned no SequenceNumber: {seq}")
        seq = [int(x) for x in seq]
        need(seq == sorted(seq) and len(set(seq)) == 5, f"SequenceNumbers not strictly increasing: {seq}")
    r.check("FIFO: send 5 messages in one group", c_fifo_send)

    def c_fifo_order():
        eq(len(fifo_sent), 5, "messages sent")
        got = []
        deadline = time.time() + 10
        while len(got) < 5 and time.time() < deadline:
            msgs = sqs.receive_message(QueueUrl=q["fifo"], MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                       AttributeNames=["All"]).get("Messages", [])
            got.extend(msgs)
            if msgs:  # the group stays locked while its messages are in flight
                sqs.delete_message_batch(QueueUrl=q["fifo"], Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
        eq([m["Body"] for m in got], fifo_bodies, "bodies in order")
        for m, out, b in zip(got, fifo_sent, fifo_bodies):
            a = m.get("Attributes", {})
            eq(m["MessageId"], out["MessageId"], "MessageId")
            eq(a.get("MessageGroupId"), "group-1", "MessageGroupId")
            need(a.get("SequenceNumber"), "no SequenceNumber attribute")
            if out.get("SequenceNumber"):
                eq(a.get("SequenceNumber"), out["SequenceNumber"], "SequenceNumber")
            eq(a.get("MessageDeduplicationId"), hashlib.sha256(b.encode()).hexdigest(),
               "MessageDeduplicationId (content-based: SHA-256 of the body)")
    r.check("FIFO: receive in order (MaxNumberOfMessages=10)", c_fifo_order)

    def c_fifo_dedup():
        b = "deduplicated body"
        first = sqs.send_message(QueueUrl=need_q("fifo"), MessageBody=b, MessageGroupId="group-2")
        second = sqs.send_message(QueueUrl=q["fifo"], MessageBody=b, MessageGroupId="group-2")
        eq(second["MessageId"], first["MessageId"], "MessageId of the duplicate send")
        msgs = sqs.receive_message(QueueUrl=q["fifo"], MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        eq([m["Body"] for m in msgs], [b], "bodies received after a duplicate send")
        sqs.delete_message(QueueUrl=q["fifo"], ReceiptHandle=msgs[0]["ReceiptHandle"])
    r.check("FIFO: deduplication (same body returns same MessageId, delivered once)", c_fifo_dedup)

    # --- attributes, tags, purge ----------------------------------------------------------
    def c_get_attrs():
        url = need_q("std")
        for i in range(2):
            sqs.send_message(QueueUrl=url, MessageBody=f"count me {i}")
        a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        eq(a.get("ApproximateNumberOfMessages"), "2", "ApproximateNumberOfMessages")
        arn = a.get("QueueArn", "")
        need(arn.startswith("arn:aws:sqs:") and arn.endswith(":" + names["std"]), f"QueueArn {arn!r}")
        for k in ("VisibilityTimeout", "MessageRetentionPeriod", "MaximumMessageSize", "DelaySeconds",
                  "ReceiveMessageWaitTimeSeconds", "CreatedTimestamp", "LastModifiedTimestamp"):
            need(k in a, f"attribute {k} missing from {sorted(a)}")
        f = sqs.get_queue_attributes(QueueUrl=need_q("fifo"), AttributeNames=["All"])["Attributes"]
        eq(f.get("FifoQueue"), "true", "FifoQueue of the FIFO queue")
        eq(f.get("ContentBasedDeduplication"), "true", "ContentBasedDeduplication of the FIFO queue")
    r.check("get_queue_attributes (ApproximateNumberOfMessages and more)", c_get_attrs)

    def c_set_attrs():
        url = need_q("std")
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "45", "DelaySeconds": "0",
                                                           "MessageRetentionPeriod": "3600"})
        a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
            "VisibilityTimeout", "MessageRetentionPeriod"])["Attributes"]
        eq(a, {"VisibilityTimeout": "45", "MessageRetentionPeriod": "3600"}, "attributes read back")
    r.check("set_queue_attributes", c_set_attrs)

    def c_tags():
        url = need_q("std")
        sqs.tag_queue(QueueUrl=url, Tags={"team": "sluice", "env": "test <&>"})
        eq(sqs.list_queue_tags(QueueUrl=url).get("Tags"), {"team": "sluice", "env": "test <&>"}, "tags after tag_queue")
        sqs.untag_queue(QueueUrl=url, TagKeys=["env"])
        eq(sqs.list_queue_tags(QueueUrl=url).get("Tags"), {"team": "sluice"}, "tags after untag_queue")
    r.check("tag_queue / list_queue_tags / untag_queue", c_tags)

    def c_purge():
        url = need_q("std")
        sqs.purge_queue(QueueUrl=url)
        deadline = time.time() + 5
        while True:
            n = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
                "Attributes"].get("ApproximateNumberOfMessages")
            if n == "0" or time.time() > deadline:
                break
            time.sleep(0.2)
        eq(n, "0", "ApproximateNumberOfMessages after purge_queue")
        eq(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []), [], "messages after purge")
    r.check("purge_queue", c_purge)

    # --- errors ---------------------------------------------------------------------
    def expect_error(call, code, status=400, cls=None):
        try:
            call()
        except ClientError as exc:
            err = exc.response.get("Error", {})
            eq(err.get("Code"), code, "e.response['Error']['Code']")
            eq(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode"), status, "HTTP status")
            if cls is not None:
                need(isinstance(exc, cls), f"exception is {type(exc).__name__}, not {cls.__name__}")
            return
        raise Failed(f"no error (wanted {code})")

    missing = f"{prefix}-does-not-exist"

    def c_err_missing():
        expect_error(lambda: sqs.get_queue_url(QueueName=missing),
                     "AWS.SimpleQueueService.NonExistentQueue", cls=sqs.exceptions.QueueDoesNotExist)
        url = need_q("std").rsplit("/", 1)[0] + "/" + missing
        expect_error(lambda: sqs.send_message(QueueUrl=url, MessageBody="x"),
                     "AWS.SimpleQueueService.NonExistentQueue", cls=sqs.exceptions.QueueDoesNotExist)
    r.check("error: missing queue -> AWS.SimpleQueueService.NonExistentQueue (QueueDoesNotExist)", c_err_missing)

    def c_err_max():
        expect_error(lambda: sqs.receive_message(QueueUrl=need_q("std"), MaxNumberOfMessages=11),
                     "InvalidParameterValue")
    r.check("error: MaxNumberOfMessages=11 -> InvalidParameterValue", c_err_max)

    # --- long polling ---------------------------------------------------------------
    def c_long_poll():
        url = need_q("poll")
        other = new_client(endpoint_url=ep)
        errors = []

        def later():
            time.sleep(0.5)
            try:
                other.send_message(QueueUrl=url, MessageBody="woke you up")
            except Exception as exc:  # reported below
                errors.append(exc)

        t = threading.Thread(target=later)
        start = time.monotonic()
        t.start()
        try:
            msgs = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MaxNumberOfMessages=1).get("Messages", [])
        finally:
            t.join()
        took = time.monotonic() - start
        need(not errors, f"send from the thread failed: {errors[:1]}")
        eq([m["Body"] for m in msgs], ["woke you up"], "bodies returned by the long poll")
        need(0.4 <= took < 4.5, f"long poll returned after {took:.2f}s (want soon after the send at 0.5s)")
        sqs.delete_message(QueueUrl=url, ReceiptHandle=msgs[0]["ReceiptHandle"])
    r.check("long poll (WaitTimeSeconds=5) returns a message sent 0.5s later", c_long_poll)

    def c_long_poll_empty():
        url = need_q("poll")
        start = time.monotonic()
        msgs = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
        took = time.monotonic() - start
        eq(msgs, [], "messages")
        need(0.9 <= took < 5, f"empty long poll of 1s returned after {took:.2f}s")
    r.check("long poll on an empty queue waits WaitTimeSeconds", c_long_poll_empty)

    # --- endpoint from the environment (botocore >= 1.31: AWS_ENDPOINT_URL_<SERVICE>) ----------
    bv = tuple(int(x) for x in botocore.__version__.split(".")[:2])
    if bv >= (1, 31):
        def c_env_endpoint():
            need_q("std")
            old = os.environ.get("AWS_ENDPOINT_URL_SQS")
            os.environ["AWS_ENDPOINT_URL_SQS"] = ep
            try:
                c = new_client()
            finally:
                if old is None:
                    os.environ.pop("AWS_ENDPOINT_URL_SQS", None)
                else:
                    os.environ["AWS_ENDPOINT_URL_SQS"] = old
            eq(c.meta.endpoint_url.rstrip("/"), ep, "client endpoint from AWS_ENDPOINT_URL_SQS")
            eq(c.get_queue_url(QueueName=names["std"])["QueueUrl"], q["std"], "get_queue_url")
        r.check("endpoint from AWS_ENDPOINT_URL_SQS", c_env_endpoint)
    else:
        r.skip("endpoint from AWS_ENDPOINT_URL_SQS", f"botocore {botocore.__version__} predates it (1.31)")

    # --- delete ---------------------------------------------------------------------
    def c_delete_queue():
        need(q, "no queues were created")
        for kind, url in list(q.items()):
            sqs.delete_queue(QueueUrl=url)
            del q[kind]
        deadline = time.time() + 5
        while True:
            left = sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
            if not left or time.time() > deadline:
                break
            time.sleep(0.2)
        eq(left, [], "queues listed after delete_queue")
        expect_error(lambda: sqs.get_queue_url(QueueName=names["std"]), "AWS.SimpleQueueService.NonExistentQueue")
    r.check("delete_queue", c_delete_queue)

    for url in q.values():  # leftovers of failed checks
        try:
            sqs.delete_queue(QueueUrl=url)
        except Exception:
            pass

    print(f"{args.label}: {r.passed} passed, {r.failed} failed", flush=True)
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
