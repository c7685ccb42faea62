"""AWS Bedrock Runtime: ``Converse`` and ``ConverseStream`` (binary event stream), SigV4-signed.

``BedrockChatModel("us.amazon.nova-micro-v1:0", region="us-east-1")``, or ``bedrock:<model id>``
in the registry. Signing needs the extra ``bedrock`` (botocore).
"""

from .model import BedrockChatModel
from .options import BedrockChatOptions
from .provider import BedrockProvider

__all__ = ["BedrockChatModel", "BedrockChatOptions", "BedrockProvider"]
