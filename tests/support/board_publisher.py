"""What the board publisher (a CloudFormation custom resource) is driven with in tests: a local
server standing in for CloudFormation's pre-signed response URL, the request CloudFormation sends,
the board's files on disk, and moto's bucket and CloudFront distribution to publish them to."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.functions.stack import Stack

CONFIG = {
    "auth": "cognito",
    "api_base": "",
    "cognito_domain": "https://taskgate-3f1c.auth.us-east-1.amazoncognito.com",
    "client_id": "4l1ent1d",
    "scopes": "openid email profile",
}


class CloudFormation:
    """Receives the custom resource's answers, as CloudFormation's pre-signed S3 URL would."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers["Content-Length"])
                outer.answers.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/cfn-response?X-Amz-Signature=abc"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def board_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "web" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def custom_resource_request(
    kind: str, cfn: CloudFormation, bucket: str, distribution: str, **extra: Any
) -> dict[str, Any]:
    return {
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:board-publisher",
        "ResponseURL": cfn.url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/taskgate/3f1c0000-0000-0000-0000-000000000000",
        "RequestId": f"req-{kind.lower()}",
        "LogicalResourceId": "BoardFiles",
        "ResourceType": "Custom::BoardFiles",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:board-publisher",
            "Version": "1",
            "Bucket": bucket,
            "DistributionId": distribution,
            "Config": CONFIG,
        },
        **extra,
    }


def bucket_and_distribution(s: Stack) -> tuple[Any, Any, str, str]:
    import boto3

    s3 = boto3.client("s3", region_name="us-east-1")
    cloudfront = boto3.client("cloudfront", region_name="us-east-1")
    bucket = f"{s.table}-board"
    s3.create_bucket(Bucket=bucket)
    distribution = cloudfront.create_distribution(
        DistributionConfig={
            "CallerReference": "taskgate-test",
            "Comment": "board",
            "Enabled": True,
            "Origins": {
                "Quantity": 1,
                "Items": [
                    {
                        "Id": "board",
                        "DomainName": f"{bucket}.s3.amazonaws.com",
                        "S3OriginConfig": {"OriginAccessIdentity": ""},
                    }
                ],
            },
            "DefaultCacheBehavior": {
                "TargetOriginId": "board",
                "ViewerProtocolPolicy": "redirect-to-https",
                "MinTTL": 0,
                "ForwardedValues": {"QueryString": False, "Cookies": {"Forward": "none"}},
                "TrustedSigners": {"Enabled": False, "Quantity": 0},
            },
        }
    )["Distribution"]["Id"]
    return s3, cloudfront, bucket, distribution
