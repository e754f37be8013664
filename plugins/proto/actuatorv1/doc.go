// Package actuatorv1 is the Go code generated from actuator.proto, version
// 1 of the protocol between poolc and its actuator plugins. It is
// committed so that building poolc or a plugin needs no protoc; run
// `go generate ./plugins/proto/...` after changing the .proto.
//
// Plugins written in Go should not use it directly: plugins/sdk wraps it.
package actuatorv1

//go:generate sh ../generate.sh
