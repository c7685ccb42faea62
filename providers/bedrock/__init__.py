"""AWS Bedrock Runtime (``Converse`` / ``ConverseStream``): so far the pieces below the model, the
event-stream framing its streams come in (:mod:`providers.bedrock._eventstream`)."""
