// Client scenario list for sluice, driven by the AWS SDK for JavaScript v3
// (@aws-sdk/client-sqs, JSON protocol). Its SQS middleware checks the MD5 of
// every body it sends and receives; this suite leaves that check on and also
// proves, against a stub answering a wrong digest, that it is really active.
//
// Prints "PASS name" / "FAIL name: why" lines, then "<label>: N passed, N failed";
// exits 1 when any check failed.
//
// Usage: node check.mjs --endpoint http://127.0.0.1:PORT [--label js]

import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  SQSClient,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueueTagsCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  UntagQueueCommand,
} from "@aws-sdk/client-sqs";

const { values: opts } = parseArgs({
  options: {
    endpoint: { type: "string" },
    label: { type: "string", default: "js" },
    region: { type: "string", default: process.env.AWS_DEFAULT_REGION || "us-east-1" },
  },
});
if (!opts.endpoint) {
  console.error("usage: node check.mjs --endpoint URL [--label js]");
  process.exit(2);
}
const ep = opts.endpoint.replace(/\/+$/, "");
const label = opts.label;

// ---------------------------------------------------------------------------
// Digests, written from AWS's description of them.

const md5Hex = (data) => createHash("md5").update(data).digest("hex");

// MD5OfMessageAttributes: attributes in order of name; each contributes its
// name, DataType, a transport byte (1 string value, 2 binary value) and value,
// every variable part preceded by its length as 4-byte big-endian.
function md5OfMessageAttributes(attrs) {
  const h = createHash("md5");
  const put = (buf) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(buf.length);
    h.update(len);
    h.update(buf);
  };
  const names = Object.keys(attrs).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  for (const name of names) {
    const a = attrs[name];
    put(Buffer.from(name, "utf8"));
    put(Buffer.from(a.DataType, "utf8"));
    if (a.BinaryValue !== undefined) {
      h.update(Buffer.from([2]));
      put(Buffer.from(a.BinaryValue));
    } else {
      h.update(Buffer.from([1]));
      put(Buffer.from(a.StringValue, "utf8"));
    }
  }
  return h.digest("hex");
}

// ---------------------------------------------------------------------------
// A tiny check runner.

class Failed extends Error {}
const need = (cond, msg) => {
  if (!cond) throw new Failed(msg);
};
const show = (v) => JSON.stringify(v, (k, x) => (x instanceof Uint8Array ? `<bytes ${Buffer.from(x).toString("hex")}>` : x));
const eq = (got, want, what) => {
  if (show(got) !== show(want)) throw new Failed(`${what}: got ${show(got)}, want ${show(want)}`);
};
const sortKeys = (o) => Object.fromEntries(Object.keys(o || {}).sort().map((k) => [k, o[k]]));
// Normalises a MessageAttributes map to the fields set, bytes as Buffer.
const normAttrs = (attrs) =>
  sortKeys(Object.fromEntries(Object.entries(attrs || {}).map(([k, a]) => [k, a.BinaryValue !== undefined
    ? { BinaryValue: Buffer.from(a.BinaryValue).toString("base64"), DataType: a.DataType }
    : { DataType: a.DataType, StringValue: a.StringValue }])));

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`PASS ${name}`);
    return true;
  } catch (e) {
    failed++;
    let why = e instanceof Failed ? e.message : `${e.name}${e.Code ? ` (${e.Code})` : ""}: ${e.message}`;
    why = why.replace(/\n/g, " | ");
    if (why.length > 400) why = why.slice(0, 400) + "...";
    console.log(`FAIL ${name}: ${why}`);
    return false;
  }
}
const skip = (name, why) => console.log(`SKIP ${name}: ${why}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function expectError(fn, { code, name, status = 400 }) {
  try {
    await fn();
  } catch (e) {
    if (e instanceof Failed) throw e;
    // With awsQueryCompatible the SDK copies the x-amzn-query-error code to e.Code.
    eq(e.Code, code, "error Code (x-amzn-query-error)");
    if (name) eq(e.name, name, "error name");
    eq(e.$metadata?.httpStatusCode, status, "HTTP status");
    return e;
  }
  throw new Failed(`no error (wanted ${code})`);
}

// ---------------------------------------------------------------------------

const sdkVersion = JSON.parse(readFileSync(new URL("./node_modules/@aws-sdk/client-sqs/package.json", import.meta.url))).version;
console.log(`# ${label}: node ${process.version}, @aws-sdk/client-sqs ${sdkVersion}, endpoint ${ep}`);

const newClient = (extra = {}) => new SQSClient({ region: opts.region, maxAttempts: 3, ...extra });
const sqs = newClient({ endpoint: ep });
const send = (cmd) => sqs.send(cmd);

await check("harness self-test: message attribute digest", async () => {
  const attrs = { b: { DataType: "Binary", BinaryValue: Uint8Array.from([0, 255]) }, a: { DataType: "String", StringValue: "x" } };
  const bytes = Buffer.concat([
    Buffer.from("\0\0\0\x01a\0\0\0\x06String\x01\0\0\0\x01x", "latin1"),
    Buffer.from("\0\0\0\x01b\0\0\0\x06Binary\x02\0\0\0\x02", "latin1"),
    Buffer.from([0, 255]),
  ]);
  eq(md5OfMessageAttributes(attrs), md5Hex(bytes), "digest of the fixed set");
});

// The SDK's body MD5 check must be on, or the round trips below prove less.
await check("harness self-test: SDK rejects a wrong MD5OfBody", async () => {
  const stub = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/x-amz-json-1.0" });
      res.end(JSON.stringify({ Messages: [{ MessageId: "m1", ReceiptHandle: "r1", Body: "hello", MD5OfBody: md5Hex("not hello") }] }));
    });
  });
  await new Promise((r) => stub.listen(0, "127.0.0.1", r));
  try {
    const c = newClient({ endpoint: `http://127.0.0.1:${stub.address().port}`, maxAttempts: 1 });
    let err;
    try {
      await c.send(new ReceiveMessageCommand({ QueueUrl: `http://127.0.0.1:${stub.address().port}/000000000000/q` }));
    } catch (e) {
      err = e;
    }
    need(err && /MD5/i.test(err.message), `no MD5 error from a wrong digest (got ${err ? err.message : "success"})`);
  } finally {
    stub.close();
  }
});

const tag = `${process.pid}${Math.floor(Math.random() * 0xffffff).toString(16).padStart(6, "0")}`;
const prefix = `sluice-${label}-${tag}`;
const names = { std: `${prefix}-std`, fifo: `${prefix}-fifo.fifo`, poll: `${prefix}-poll` };
const q = {};
const needQ = (k) => {
  need(q[k], `no ${k} queue (CreateQueue failed)`);
  return q[k];
};

// --- queues ------------------------------------------------------------------
await check("CreateQueue (Standard)", async () => {
  const { QueueUrl } = await send(new CreateQueueCommand({ QueueName: names.std }));
  need(QueueUrl?.endsWith("/" + names.std), `QueueUrl ${QueueUrl}`);
  q.std = QueueUrl;
  q.poll = (await send(new CreateQueueCommand({ QueueName: names.poll }))).QueueUrl;
});
await check("CreateQueue (FIFO, ContentBasedDeduplication)", async () => {
  const { QueueUrl } = await send(new CreateQueueCommand({
    QueueName: names.fifo, Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" },
  }));
  need(QueueUrl?.endsWith("/" + names.fifo), `QueueUrl ${QueueUrl}`);
  q.fifo = QueueUrl;
});
await check("GetQueueUrl", async () => {
  for (const k of ["std", "fifo"]) {
    eq((await send(new GetQueueUrlCommand({ QueueName: names[k] }))).QueueUrl, needQ(k), `GetQueueUrl(${names[k]})`);
  }
});
await check("ListQueues with prefix", async () => {
  needQ("std"); needQ("fifo"); needQ("poll");
  const got = (await send(new ListQueuesCommand({ QueueNamePrefix: prefix }))).QueueUrls || [];
  eq([...got].sort(), Object.values(q).sort(), "QueueUrls");
  const none = (await send(new ListQueuesCommand({ QueueNamePrefix: prefix + "-nothing-has-this" }))).QueueUrls || [];
  eq(none, [], "QueueUrls for a prefix matching nothing");
});

// --- one message, full round trip ----------------------------------------------------
const body = "Hello <sluice> & friends ✓\r\nsecond line";
const attrs = {
  str: { DataType: "String", StringValue: "value <&> é\r\n" },
  num: { DataType: "Number", StringValue: "-12.5" },
  bin: { DataType: "Binary", BinaryValue: Uint8Array.from([0, 1, 2, 0xfe, 0xff, 0x20, 0x62]) },
  custom: { DataType: "String.custom-type", StringValue: "c" },
};
let sent;
await check("SendMessage with String/Number/Binary attributes (MD5s)", async () => {
  const out = await send(new SendMessageCommand({ QueueUrl: needQ("std"), MessageBody: body, MessageAttributes: attrs }));
  need(out.MessageId, "no MessageId");
  eq(out.MD5OfMessageBody, md5Hex(body), "MD5OfMessageBody");
  eq(out.MD5OfMessageAttributes, md5OfMessageAttributes(attrs), "MD5OfMessageAttributes");
  sent = out;
});
let received;
await check("ReceiveMessage round trip (body, attributes, system attributes; SDK MD5 check)", async () => {
  need(sent, "nothing was sent");
  const { Messages = [] } = await send(new ReceiveMessageCommand({
    QueueUrl: q.std, MaxNumberOfMessages: 1, WaitTimeSeconds: 2, MessageAttributeNames: ["All"], AttributeNames: ["All"],
  }));
  eq(Messages.length, 1, "messages received");
  const m = Messages[0];
  eq(m.MessageId, sent.MessageId, "MessageId");
  eq(m.Body, body, "Body");
  eq(m.MD5OfBody, md5Hex(body), "MD5OfBody");
  eq(normAttrs(m.MessageAttributes), normAttrs(attrs), "MessageAttributes");
  eq(m.MD5OfMessageAttributes, md5OfMessageAttributes(attrs), "MD5OfMessageAttributes");
  for (const k of ["SentTimestamp", "ApproximateFirstReceiveTimestamp", "SenderId"]) {
    need(m.Attributes?.[k], `system attribute ${k} missing`);
  }
  eq(m.Attributes?.ApproximateReceiveCount, "1", "ApproximateReceiveCount");
  received = m;
});
await check("ChangeMessageVisibility (0 makes it visible again)", async () => {
  need(received, "nothing was received");
  await send(new ChangeMessageVisibilityCommand({ QueueUrl: q.std, ReceiptHandle: received.ReceiptHandle, VisibilityTimeout: 0 }));
  const { Messages = [] } = await send(new ReceiveMessageCommand({
    QueueUrl: q.std, MaxNumberOfMessages: 1, WaitTimeSeconds: 2, MessageSystemAttributeNames: ["All"],
  }));
  eq(Messages.length, 1, "messages received after VisibilityTimeout=0");
  eq(Messages[0].MessageId, sent.MessageId, "MessageId");
  eq(Messages[0].Attributes?.ApproximateReceiveCount, "2", "ApproximateReceiveCount");
  received = Messages[0];
});
await check("DeleteMessage", async () => {
  need(received, "nothing was received");
  await send(new DeleteMessageCommand({ QueueUrl: q.std, ReceiptHandle: received.ReceiptHandle }));
  const { Attributes = {} } = await send(new GetQueueAttributesCommand({
    QueueUrl: q.std, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
  }));
  eq(Attributes.ApproximateNumberOfMessages, "0", "ApproximateNumberOfMessages after delete");
  eq(Attributes.ApproximateNumberOfMessagesNotVisible, "0", "ApproximateNumberOfMessagesNotVisible after delete");
});

// --- bodies with characters that need care ---------------------------------------------
const special = {
  unicode: "héllo wörld ✓ 日本語 Ελληνικά 😀 \u00a0end",
  "xml characters": "<msg a=\"1\" b='2'>fish &amp; chips & peas</msg> ]]> &lt;",
  "CR LF": "line one\r\nline two\rline three\nline four\r\n",
  "tab and edges": "\t leading tab and trailing spaces   ",
};
const specialSent = {}; // MessageId -> what
await check("send bodies with unicode, <, &, CR LF", async () => {
  for (const [what, b] of Object.entries(special)) {
    const out = await send(new SendMessageCommand({
      QueueUrl: needQ("std"), MessageBody: b, MessageAttributes: { what: { DataType: "String", StringValue: b } },
    }));
    eq(out.MD5OfMessageBody, md5Hex(b), `MD5OfMessageBody (${what})`);
    specialSent[out.MessageId] = what;
  }
});
const specialGot = {};
if (Object.keys(specialSent).length) {
  const deadline = Date.now() + 10000;
  while (Object.keys(specialGot).length < Object.keys(specialSent).length && Date.now() < deadline) {
    let msgs;
    try {
      msgs = (await send(new ReceiveMessageCommand({
        QueueUrl: q.std, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ["All"],
      }))).Messages || [];
    } catch (e) {
      specialGot.error = e;
      break;
    }
    for (const m of msgs) {
      specialGot[m.MessageId] = m;
      await send(new DeleteMessageCommand({ QueueUrl: q.std, ReceiptHandle: m.ReceiptHandle })).catch(() => {});
    }
  }
}
for (const [what, b] of Object.entries(special)) {
  await check(`round trip: ${what}`, async () => {
    if (specialGot.error) throw specialGot.error;
    const id = Object.keys(specialSent).find((k) => specialSent[k] === what);
    need(id, "not sent");
    const m = specialGot[id];
    need(m, "not received");
    eq(m.Body, b, "Body");
    eq(m.MD5OfBody, md5Hex(b), "MD5OfBody");
    eq(m.MessageAttributes?.what?.StringValue, b, "String attribute value");
  });
}

// --- batches ------------------------------------------------------------------
const batch = [0, 1, 2].map((i) => ({
  Id: `e${i}`, MessageBody: `batch body ${i} <&>`, MessageAttributes: { i: { DataType: "Number", StringValue: String(i) } },
}));
const batchIds = {}; // MessageId -> entry
await check("SendMessageBatch (3 entries)", async () => {
  const out = await send(new SendMessageBatchCommand({ QueueUrl: needQ("std"), Entries: batch }));
  eq(out.Failed || [], [], "Failed entries");
  const ok = Object.fromEntries((out.Successful || []).map((e) => [e.Id, e]));
  eq(Object.keys(ok).sort(), batch.map((e) => e.Id), "Successful entry ids");
  for (const e of batch) {
    eq(ok[e.Id].MD5OfMessageBody, md5Hex(e.MessageBody), `MD5OfMessageBody of ${e.Id}`);
    eq(ok[e.Id].MD5OfMessageAttributes, md5OfMessageAttributes(e.MessageAttributes), `MD5OfMessageAttributes of ${e.Id}`);
    batchIds[ok[e.Id].MessageId] = e;
  }
});
const batchGot = {};
await check("receive the batch (MaxNumberOfMessages=10)", async () => {
  need(Object.keys(batchIds).length, "nothing was sent");
  const deadline = Date.now() + 10000;
  while (Object.keys(batchGot).length < 3 && Date.now() < deadline) {
    const { Messages = [] } = await send(new ReceiveMessageCommand({
      QueueUrl: q.std, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ["All"],
    }));
    for (const m of Messages) batchGot[m.MessageId] = m;
  }
  eq(Object.keys(batchGot).sort(), Object.keys(batchIds).sort(), "MessageIds received");
  for (const [id, m] of Object.entries(batchGot)) {
    eq(m.Body, batchIds[id].MessageBody, "Body");
    eq(normAttrs(m.MessageAttributes), normAttrs(batchIds[id].MessageAttributes), "MessageAttributes");
  }
});
await check("DeleteMessageBatch", async () => {
  const msgs = Object.values(batchGot);
  need(msgs.length, "nothing was received");
  const Entries = msgs.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle }));
  const out = await send(new DeleteMessageBatchCommand({ QueueUrl: q.std, Entries }));
  eq(out.Failed || [], [], "Failed entries");
  eq((out.Successful || []).map((e) => e.Id).sort(), Entries.map((e) => e.Id).sort(), "Successful ids");
});

// --- FIFO ---------------------------------------------------------------------
const fifoBodies = [0, 1, 2, 3, 4].map((i) => `fifo message ${i} ✓`);
const fifoSent = [];
await check("FIFO: send 5 messages in one group", async () => {
  for (const b of fifoBodies) {
    const out = await send(new SendMessageCommand({ QueueUrl: needQ("fifo"), MessageBody: b, MessageGroupId: "group-1" }));
    fifoSent.push(out);
    eq(out.MD5OfMessageBody, md5Hex(b), "MD5OfMessageBody");
  }
  const seq = fifoSent.map((o) => o.SequenceNumber);
  need(seq.every(Boolean), `SendMessage on a FIFO queue returned no SequenceNumber: ${show(seq)}`);
  const big = seq.map(BigInt);
  need(big.every((x, i) => i === 0 || x > big[i - 1]), `SequenceNumbers not strictly increasing: ${seq}`);
});
await check("FIFO: receive in order (MaxNumberOfMessages=10)", async () => {
  eq(fifoSent.length, 5, "messages sent");
  const got = [];
  const deadline = Date.now() + 10000;
  while (got.length < 5 && Date.now() < deadline) {
    const { Messages = [] } = await send(new ReceiveMessageCommand({
      QueueUrl: q.fifo, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, AttributeNames: ["All"],
    }));
    got.push(...Messages);
    if (Messages.length) {
      await send(new DeleteMessageBatchCommand({
        QueueUrl: q.fifo, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }));
    }
  }
  eq(got.map((m) => m.Body), fifoBodies, "bodies in order");
  got.forEach((m, i) => {
    eq(m.MessageId, fifoSent[i].MessageId, "MessageId");
    eq(m.Attributes?.MessageGroupId, "group-1", "MessageGroupId");
    need(m.Attributes?.SequenceNumber, "no SequenceNumber attribute");
    if (fifoSent[i].SequenceNumber) eq(m.Attributes.SequenceNumber, fifoSent[i].SequenceNumber, "SequenceNumber");
    eq(m.Attributes?.MessageDeduplicationId, createHash("sha256").update(fifoBodies[i]).digest("hex"),
      "MessageDeduplicationId (content-based: SHA-256 of the body)");
  });
});
await check("FIFO: deduplication (same body returns same MessageId, delivered once)", async () => {
  const b = "deduplicated body";
  const first = await send(new SendMessageCommand({ QueueUrl: needQ("fifo"), MessageBody: b, MessageGroupId: "group-2" }));
  const second = await send(new SendMessageCommand({ QueueUrl: q.fifo, MessageBody: b, MessageGroupId: "group-2" }));
  eq(second.MessageId, first.MessageId, "MessageId of the duplicate send");
  const { Messages = [] } = await send(new ReceiveMessageCommand({ QueueUrl: q.fifo, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
  eq(Messages.map((m) => m.Body), [b], "bodies received after a duplicate send");
  await send(new DeleteMessageCommand({ QueueUrl: q.fifo, ReceiptHandle: Messages[0].ReceiptHandle }));
});

// --- attributes, tags, purge -------------------------------------------------------------
await check("GetQueueAttributes (ApproximateNumberOfMessages and more)", async () => {
  const url = needQ("std");
  for (const i of [0, 1]) await send(new SendMessageCommand({ QueueUrl: url, MessageBody: `count me ${i}` }));
  const { Attributes: a = {} } = await send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }));
  eq(a.ApproximateNumberOfMessages, "2", "ApproximateNumberOfMessages");
  need(a.QueueArn?.startsWith("arn:aws:sqs:") && a.QueueArn.endsWith(":" + names.std), `QueueArn ${a.QueueArn}`);
  for (const k of ["VisibilityTimeout", "MessageRetentionPeriod", "MaximumMessageSize", "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds", "CreatedTimestamp", "LastModifiedTimestamp"]) {
    need(k in a, `attribute ${k} missing from ${Object.keys(a).sort()}`);
  }
  const { Attributes: f = {} } = await send(new GetQueueAttributesCommand({ QueueUrl: needQ("fifo"), AttributeNames: ["All"] }));
  eq(f.FifoQueue, "true", "FifoQueue of the FIFO queue");
  eq(f.ContentBasedDeduplication, "true", "ContentBasedDeduplication of the FIFO queue");
});
await check("SetQueueAttributes", async () => {
  const url = needQ("std");
  await send(new SetQueueAttributesCommand({
    QueueUrl: url, Attributes: { VisibilityTimeout: "45", DelaySeconds: "0", MessageRetentionPeriod: "3600" },
  }));
  const { Attributes } = await send(new GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["VisibilityTimeout", "MessageRetentionPeriod"],
  }));
  eq(sortKeys(Attributes), { MessageRetentionPeriod: "3600", VisibilityTimeout: "45" }, "attributes read back");
});
await check("TagQueue / ListQueueTags / UntagQueue", async () => {
  const url = needQ("std");
  await send(new TagQueueCommand({ QueueUrl: url, Tags: { team: "sluice", env: "test <&>" } }));
  eq(sortKeys((await send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags), { env: "test <&>", team: "sluice" }, "tags after TagQueue");
  await send(new UntagQueueCommand({ QueueUrl: url, TagKeys: ["env"] }));
  eq((await send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags, { team: "sluice" }, "tags after UntagQueue");
});
await check("PurgeQueue", async () => {
  const url = needQ("std");
  await send(new PurgeQueueCommand({ QueueUrl: url }));
  const deadline = Date.now() + 5000;
  let n;
  for (;;) {
    n = (await send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] })))
      .Attributes?.ApproximateNumberOfMessages;
    if (n === "0" || Date.now() > deadline) break;
    await sleep(200);
  }
  eq(n, "0", "ApproximateNumberOfMessages after PurgeQueue");
  eq((await send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }))).Messages || [], [], "messages after purge");
});

// --- errors ---------------------------------------------------------------------
const missing = `${prefix}-does-not-exist`;
await check("error: missing queue -> QueueDoesNotExist (Code AWS.SimpleQueueService.NonExistentQueue)", async () => {
  const e = await expectError(() => send(new GetQueueUrlCommand({ QueueName: missing })),
    { code: "AWS.SimpleQueueService.NonExistentQueue", name: "QueueDoesNotExist" });
  need(e instanceof QueueDoesNotExist, `error is ${e.constructor?.name}, not QueueDoesNotExist`);
  const url = needQ("std").replace(/[^/]+$/, missing);
  await expectError(() => send(new SendMessageCommand({ QueueUrl: url, MessageBody: "x" })),
    { code: "AWS.SimpleQueueService.NonExistentQueue", name: "QueueDoesNotExist" });
});
await check("error: MaxNumberOfMessages=11 -> InvalidParameterValue", async () => {
  await expectError(() => send(new ReceiveMessageCommand({ QueueUrl: needQ("std"), MaxNumberOfMessages: 11 })),
    { code: "InvalidParameterValue" });
});

// --- long polling ---------------------------------------------------------------
await check("long poll (WaitTimeSeconds=5) returns a message sent 0.5s later", async () => {
  const url = needQ("poll");
  const other = newClient({ endpoint: ep });
  const start = performance.now();
  const later = sleep(500).then(() => other.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "woke you up" })));
  const [res] = await Promise.all([
    send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 5, MaxNumberOfMessages: 1 })),
    later,
  ]);
  const took = (performance.now() - start) / 1000;
  const msgs = res.Messages || [];
  eq(msgs.map((m) => m.Body), ["woke you up"], "bodies returned by the long poll");
  need(took >= 0.4 && took < 4.5, `long poll returned after ${took.toFixed(2)}s (want soon after the send at 0.5s)`);
  await send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle }));
});
await check("long poll on an empty queue waits WaitTimeSeconds", async () => {
  const url = needQ("poll");
  const start = performance.now();
  const { Messages = [] } = await send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }));
  const took = (performance.now() - start) / 1000;
  eq(Messages, [], "messages");
  need(took >= 0.9 && took < 5, `empty long poll of 1s returned after ${took.toFixed(2)}s`);
});

// --- endpoint from the environment ------------------------------------------------------------
await check("endpoint from AWS_ENDPOINT_URL_SQS", async () => {
  needQ("std");
  const old = process.env.AWS_ENDPOINT_URL_SQS;
  process.env.AWS_ENDPOINT_URL_SQS = ep;
  try {
    const c = newClient();
    eq((await c.send(new GetQueueUrlCommand({ QueueName: names.std }))).QueueUrl, q.std, "GetQueueUrl");
  } finally {
    if (old === undefined) delete process.env.AWS_ENDPOINT_URL_SQS;
    else process.env.AWS_ENDPOINT_URL_SQS = old;
  }
});

// --- delete ---------------------------------------------------------------------
await check("DeleteQueue", async () => {
  need(Object.keys(q).length, "no queues were created");
  for (const [k, url] of Object.entries(q)) {
    await send(new DeleteQueueCommand({ QueueUrl: url }));
    delete q[k];
  }
  const deadline = Date.now() + 5000;
  let left;
  for (;;) {
    left = (await send(new ListQueuesCommand({ QueueNamePrefix: prefix }))).QueueUrls || [];
    if (!left.length || Date.now() > deadline) break;
    await sleep(200);
  }
  eq(left, [], "queues listed after DeleteQueue");
  await expectError(() => send(new GetQueueUrlCommand({ QueueName: names.std })), { code: "AWS.SimpleQueueService.NonExistentQueue" });
});

for (const url of Object.values(q)) await send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => {});

console.log(`${label}: ${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
