#!/bin/sh
# Regenerates the Go code of the actuator protocol in actuatorv3/.
# Needs protoc and the Go generators at the versions the committed code
# names in its header:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
set -eu
cd "$(dirname "$0")"
protoc \
	--go_out=actuatorv3 --go_opt=paths=source_relative \
	--go-grpc_out=actuatorv3 --go-grpc_opt=paths=source_relative \
	actuator.proto
