"""A stock Python grpcio client over filprove's unix socket, with grpcio's default
:authority (grpcio sends the percent-encoded socket path).

Usage: grpcio_client.py SOCKET DIR METHOD... where each METHOD is NAME=/package.Service/Method;
reads DIR/NAME.request (serialized protobuf), calls METHOD with it and writes the reply to
DIR/NAME.response. Messages stay raw bytes, so no generated code is needed. Any failed call
raises (non-zero exit, the status on stderr).
"""

import sys

import grpc


def main() -> None:
    socket, workdir, calls = sys.argv[1], sys.argv[2], sys.argv[3:]
    channel = grpc.insecure_channel(
        "unix://" + socket,
        options=[("grpc.max_receive_message_length", 256 << 20)],
    )
    for call in calls:
        name, method = call.split("=", 1)
        with open(f"{workdir}/{name}.request", "rb") as f:
            request = f.read()
        reply = channel.unary_unary(method)(request, timeout=600)
        with open(f"{workdir}/{name}.response", "wb") as f:
            f.write(reply)
    channel.close()


if __name__ == "__main__":
    main()
