#!/usr/bin/env python3
"""AWS CLI scenario list for sluice.

Runs one AWS CLI (given as the interpreter and the script, so that each CLI
runs under its own Python) against an endpoint, once with --endpoint-url and,
where the CLI supports it, once with AWS_ENDPOINT_URL_SQS.

Prints "PASS name" / "FAIL name: why" lines, then "<label>: N passed, N failed";
exits 1 when any check failed.

Usage:
  check_cli.py --endpoint URL --label cli-v1 --python /path/python3 --aws /path/aws \
               --expect-protocol json [--expect-error-code CODE]
"""

import argparse
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import time

NON_EXISTENT = "AWS.SimpleQueueService.NonExistentQueue"


class Failed(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Failed(msg)


def eq(got, want, what):
    if got != want:
        raise Failed(f"{what}: got {got!r}, want {want!r}")


def md5_hex(s):
    return hashlib.md5(s.encode("utf-8")).hexdigest()


def md5_of_string_attributes(attrs):
    # The SQS digest of message attributes (see infra/clients/python/check.py),
    # for String/Number values only: the CLIs encode binary arguments
    # differently (v1 raw, v2 base64), so binary is left to the SDK suites.
    h = hashlib.md5()
    for name in sorted(attrs, key=lambda n: n.encode("utf-8")):
        for part in (name, attrs[name]["DataType"]):
            b = part.encode("utf-8")
            h.update(struct.pack(">I", len(b)) + b)
        v = attrs[name]["StringValue"].encode("utf-8")
        h.update(b"\x01" + struct.pack(">I", len(v)) + v)
    return h.hexdigest()


class Runner:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, fn):
        try:
            fn()
        except Failed as exc:
            self._fail(name, str(exc))
            return False
        except Exception as exc:
            self._fail(name, f"{type(exc).__name__}: {exc}")
            return False
        self.passed += 1
        print(f"PASS {name}", flush=True)
        return True

    def _fail(self, name, why):
        self.failed += 1
        why = why.replace("\n", " | ")
        if len(why) > 500:
            why = why[:500] + "..."
        print(f"FAIL {name}: {why}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--python", required=True, help="interpreter the CLI runs under")
    ap.add_argument("--aws", required=True, help="the CLI's entry script")
    ap.add_argument("--expect-protocol", choices=["json", "query"], required=True)
    ap.add_argument("--expect-error-code", default=NON_EXISTENT,
                    help="error code the CLI prints for a missing queue")
    args = ap.parse_args()
    ep = args.endpoint.rstrip("/")
    r = Runner()

    base_env = dict(os.environ)
    base_env.pop("AWS_ENDPOINT_URL", None)
    base_env.pop("AWS_ENDPOINT_URL_SQS", None)
    base_env.update({"AWS_PAGER": "", "AWS_DEFAULT_OUTPUT": "json", "PYTHONNOUSERSITE": "1"})

    def aws(*argv, endpoint=True, env=None, timeout=60):
        cmd = [args.python, "-s", args.aws]
        if endpoint:
            cmd += ["--endpoint-url", ep]
        cmd += ["--output", "json", "sqs", *argv]
        e = dict(base_env)
        e.update(env or {})
        p = subprocess.run(cmd, env=e, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def aws_json(*argv, **kw):
        rc, out, err = aws(*argv, **kw)
        if rc != 0:
            raise Failed(f"aws sqs {argv[0]} exited {rc}: {err.strip()[-400:]}")
        return json.loads(out) if out.strip() else {}

    # --- version and what follows from it ------------------------------------
    v = subprocess.run([args.python, "-s", args.aws, "--version"], capture_output=True, env=base_env,
                       stdin=subprocess.DEVNULL)
    vtext = (v.stdout + v.stderr).decode().strip()
    print(f"# {args.label}: {vtext} ({args.python} {args.aws}), endpoint {ep}", flush=True)
    m = re.search(r"aws-cli/(\d+)\.(\d+)\.(\d+)", vtext)
    version = tuple(int(x) for x in m.groups()) if m else (0, 0, 0)

    def c_version():
        need(m, f"cannot read the version from {vtext!r}")
    r.check("aws --version", c_version)

    # AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> came with CLI v1.29.0 and v2.13.0.
    major = version[0]
    env_endpoint = version >= (2, 13, 0) if major >= 2 else version >= (1, 29, 0)
    # A service error exits 254 in v2 and 255 in v1.
    error_rc = 254 if major >= 2 else 255

    # --- protocol, read from the request the CLI logs with --debug ----------
    def c_protocol():
        rc, out, err = aws("list-queues", "--debug")
        is_json = "AmazonSQS.ListQueues" in err and "application/x-amz-json-1.0" in err
        is_query = re.search(r"['\"]Action['\"]:\s*['\"]ListQueues['\"]", err) is not None
        seen = "json" if is_json and not is_query else "query" if is_query and not is_json else "unknown"
        print(f"# {args.label}: request protocol seen in --debug: {seen}", flush=True)
        eq(seen, args.expect_protocol, "protocol of the request")
    r.check(f"protocol is {args.expect_protocol}", c_protocol)

    tag = f"{os.getpid()}{random.randrange(16**6):06x}"
    prefix = f"sluice-{args.label}-{tag}"
    std, fifo = f"{prefix}-std", f"{prefix}-fifo.fifo"
    q = {}

    def need_q(k):
        need(k in q, f"no {k} queue (create-queue failed)")
        return q[k]

    def c_create():
        url = aws_json("create-queue", "--queue-name", std).get("QueueUrl", "")
        need(url.endswith("/" + std), f"QueueUrl {url!r}")
        q["std"] = url
    r.check("create-queue", c_create)

    def c_create_fifo():
        url = aws_json("create-queue", "--queue-name", fifo,
                       "--attributes", "FifoQueue=true,ContentBasedDeduplication=true").get("QueueUrl", "")
        need(url.endswith("/" + fifo), f"QueueUrl {url!r}")
        q["fifo"] = url
    r.check("create-queue (FIFO)", c_create_fifo)

    def c_get_url():
        eq(aws_json("get-queue-url", "--queue-name", std).get("QueueUrl"), need_q("std"), "QueueUrl")
    r.check("get-queue-url", c_get_url)

    def c_list():
        got = aws_json("list-queues", "--queue-name-prefix", prefix).get("QueueUrls", [])
        eq(sorted(got), sorted([need_q("std"), need_q("fifo")]), "QueueUrls")
    r.check("list-queues --queue-name-prefix", c_list)

    body = "CLI body ✓ <xml> & more\r\nline 2"
    attrs = {"s": {"DataType": "String", "StringValue": "a <&> b"},
             "n": {"DataType": "Number", "StringValue": "42"}}
    sent = {}

    def c_send():
        out = aws_json("send-message", "--queue-url", need_q("std"), "--message-body", body,
                       "--message-attributes", json.dumps(attrs))
        need(out.get("MessageId"), f"no MessageId in {out}")
        eq(out.get("MD5OfMessageBody"), md5_hex(body), "MD5OfMessageBody")
        eq(out.get("MD5OfMessageAttributes"), md5_of_string_attributes(attrs), "MD5OfMessageAttributes")
        sent.update(out)
    r.check("send-message (attributes, MD5s)", c_send)

    got = {}

    def c_receive():
        need(sent, "nothing was sent")
        out = aws_json("receive-message", "--queue-url", q["std"], "--attribute-names", "All",
                       "--message-attribute-names", "All", "--wait-time-seconds", "2",
                       "--max-number-of-messages", "1")
        msgs = out.get("Messages", [])
        eq(len(msgs), 1, "messages received")
        m = msgs[0]
        eq(m.get("MessageId"), sent["MessageId"], "MessageId")
        eq(m.get("Body"), body, "Body")
        eq(m.get("MD5OfBody"), md5_hex(body), "MD5OfBody")
        eq(m.get("MessageAttributes"), attrs, "MessageAttributes")
        eq(m.get("Attributes", {}).get("ApproximateReceiveCount"), "1", "ApproximateReceiveCount")
        got.update(m)
    r.check("receive-message (round trip)", c_receive)

    def c_delete():
        need(got, "nothing was received")
        aws_json("delete-message", "--queue-url", q["std"], "--receipt-handle", got["ReceiptHandle"])
    r.check("delete-message", c_delete)

    def c_attrs():
        aws_json("send-message", "--queue-url", need_q("fifo"), "--message-body", "fifo via cli",
                 "--message-group-id", "g")
        a = aws_json("get-queue-attributes", "--queue-url", q["fifo"], "--attribute-names", "All").get("Attributes", {})
        eq(a.get("ApproximateNumberOfMessages"), "1", "ApproximateNumberOfMessages of the FIFO queue")
        eq(a.get("FifoQueue"), "true", "FifoQueue")
        a = aws_json("get-queue-attributes", "--queue-url", need_q("std"),
                     "--attribute-names", "ApproximateNumberOfMessages").get("Attributes", {})
        eq(a.get("ApproximateNumberOfMessages"), "0", "ApproximateNumberOfMessages after delete-message")
    r.check("get-queue-attributes", c_attrs)

    def c_error():
        rc, out, err = aws("get-queue-url", "--queue-name", prefix + "-does-not-exist")
        need(rc != 0, "exit code 0 for a missing queue")
        need(f"({args.expect_error_code})" in err, f"stderr lacks ({args.expect_error_code}): {err.strip()[-300:]!r}")
        eq(rc, error_rc, "exit code for a service error")
    r.check(f"error: missing queue -> exit {error_rc}, {args.expect_error_code} in stderr", c_error)

    if env_endpoint:
        # aws-cli v1 pins `aws sqs` to a fixed https endpoint in the regions of
        # its SSL-common-name table (us-east-1 among them) unless --endpoint-url
        # is given, so AWS_ENDPOINT_URL(_SQS) has no effect there
        # (aws/aws-cli issue 8737). Test the variable in a region outside it.
        region = base_env.get("AWS_DEFAULT_REGION", "us-east-1")
        probe = subprocess.run([args.python, "-s", "-c",
                                "import json\n"
                                "try:\n"
                                " from awscli.customizations.overridesslcommonname import SSL_COMMON_NAMES as S\n"
                                "except ImportError:\n"
                                " S = {}\n"
                                "print(json.dumps(sorted(S.get('sqs', {}))))"],
                               capture_output=True, env=base_env, stdin=subprocess.DEVNULL)
        pinned = json.loads(probe.stdout or b"[]") if probe.returncode == 0 else []
        env_region = region
        if region in pinned:
            env_region = next(x for x in ("eu-south-2", "il-central-1", "mx-central-1", "ca-west-1")
                              if x not in pinned)
            print(f"SKIP AWS_ENDPOINT_URL_SQS in {region}: aws-cli v1 pins sqs to its own endpoint there "
                  f"(aws/aws-cli#8737); testing the variable in {env_region} instead", flush=True)
        env = {"AWS_ENDPOINT_URL_SQS": ep, "AWS_DEFAULT_REGION": env_region}

        def c_env():
            name = f"{prefix}-env"
            url = aws_json("create-queue", "--queue-name", name, endpoint=False, env=env).get("QueueUrl", "")
            need(url.endswith("/" + name), f"QueueUrl {url!r}")
            q["env"] = url
            out = aws_json("send-message", "--queue-url", url, "--message-body", "via env <&>",
                           endpoint=False, env=env)
            eq(out.get("MD5OfMessageBody"), md5_hex("via env <&>"), "MD5OfMessageBody")
            msgs = aws_json("receive-message", "--queue-url", url, "--wait-time-seconds", "2",
                            endpoint=False, env=env).get("Messages", [])
            eq([m.get("Body") for m in msgs], ["via env <&>"], "bodies received")
            aws_json("delete-message", "--queue-url", url, "--receipt-handle", msgs[0]["ReceiptHandle"],
                     endpoint=False, env=env)
            rc, out, err = aws("get-queue-url", "--queue-name", prefix + "-does-not-exist", endpoint=False, env=env)
            need(rc != 0 and f"({args.expect_error_code})" in err, f"error via env endpoint: rc {rc}, {err.strip()[-300:]!r}")
            aws_json("delete-queue", "--queue-url", url, endpoint=False, env=env)
            del q["env"]
        def c_env_other_region():
            # The server serves `region` and checks signatures: a request the
            # variable sent there, signed for another region, is refused as a
            # regional AWS endpoint refuses it, which shows it arrived.
            rc, out, err = aws("list-queues", endpoint=False, env=env)
            need(rc != 0 and "(SignatureDoesNotMatch)" in err and f"not '{env_region}'" in err,
                 f"a request signed for {env_region}: rc {rc}, {err.strip()[-300:]!r}")

        if env_region == region:
            r.check(f"AWS_ENDPOINT_URL_SQS ({env_region}): create, send, receive, delete, error", c_env)
        else:
            r.check(f"AWS_ENDPOINT_URL_SQS ({env_region}): reaches the server, which refuses a signature for another region",
                    c_env_other_region)

        def c_env_precedence():
            # --endpoint-url wins over the environment: point the variable at a closed port.
            got = aws_json("list-queues", "--queue-name-prefix", prefix,
                           env={"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9"}).get("QueueUrls", [])
            need(need_q("std") in got, f"{q['std']} not in {got}")
        r.check("--endpoint-url takes precedence over AWS_ENDPOINT_URL_SQS", c_env_precedence)
    else:
        print(f"SKIP AWS_ENDPOINT_URL_SQS: aws-cli/{'.'.join(map(str, version))} predates it "
              f"(v1 >= 1.29.0, v2 >= 2.13.0)", flush=True)

    def c_delete_queue():
        need(q, "no queues were created")
        for k, url in list(q.items()):
            aws_json("delete-queue", "--queue-url", url)
            del q[k]
        deadline = time.time() + 5
        while True:
            left = aws_json("list-queues", "--queue-name-prefix", prefix).get("QueueUrls", [])
            if not left or time.time() > deadline:
                break
            time.sleep(0.3)
        eq(left, [], "QueueUrls after delete-queue")
    r.check("delete-queue", c_delete_queue)

    for url in q.values():
        aws("delete-queue", "--queue-url", url)

    print(f"{args.label}: {r.passed} passed, {r.failed} failed", flush=True)
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
