// Reads a recorded UI message stream (server-sent events) with the `ai` package's own parser and
// validator, as useChat does: parseJsonEventStream + uiMessageChunkSchema for every chunk, then
// readUIMessageStream to assemble the message (it throws on chunks out of order, e.g. a delta for a
// part that never started), then validateUIMessages on the result.
//
//   node check_ui_stream.mjs STREAM.sse [PRIOR_MESSAGE.json]
//
// PRIOR_MESSAGE is the assistant message a resumed stream continues (with its approval answered).
// Prints {"version", "chunks", "errors", "message"} as JSON (errors: the texts of `error` chunks, which
// the reader would report through onError); exits 1 with the reason on any other failure.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema, validateUIMessages } from "ai";

const [streamPath, priorPath] = process.argv.slice(2);
const fail = (why) => {
  console.error(`invalid UI message stream: ${String(why).slice(0, 2000)}`);
  process.exit(1);
};
const bytes = readFileSync(streamPath);
const source = new ReadableStream({
  start(controller) {
    // a few bytes at a time: the parser must cope with events split across reads
    for (let i = 0; i < bytes.length; i += 7) controller.enqueue(bytes.subarray(i, i + 7));
    controller.close();
  },
});
let chunks = 0;
const errors = [];
const parsed = parseJsonEventStream({ stream: source, schema: uiMessageChunkSchema }).pipeThrough(
  new TransformStream({
    transform(result, controller) {
      if (!result.success) fail(`chunk ${chunks + 1}: ${result.error?.message ?? result.error}`);
      chunks += 1;
      if (result.value.type === "error") errors.push(result.value.errorText);
      else controller.enqueue(result.value);
    },
  }),
);
const prior = priorPath ? JSON.parse(readFileSync(priorPath, "utf8")) : undefined;
let message;
try {
  for await (const snapshot of readUIMessageStream({ message: prior, stream: parsed, terminateOnError: true })) {
    message = snapshot;
  }
} catch (error) {
  fail(error?.message ?? String(error));
}
if (message === undefined) fail("no message");
try {
  await validateUIMessages({ messages: [message] });
} catch (error) {
  fail(`the assembled message: ${error?.message ?? String(error)}`);
}
const version = createRequire(import.meta.url)("ai/package.json").version;
console.log(JSON.stringify({ version, chunks, errors, message }));
