"""AWS Bedrock Runtime (``Converse`` / ``ConverseStream``), in the making: so far the reading half,
the event-stream framing its streams come in (:mod:`._eventstream`), a reply and an error body
(:mod:`._mapping`) and a stream's events (:mod:`._stream_parser`); and SigV4 signing by botocore's
signer (:mod:`._signing`, the optional extra ``bedrock``). No model yet."""
