package sdk

import "google.golang.org/grpc"

// MaxMessageSize is the largest message, in bytes, poolc and a plugin
// served by Serve send and accept either way: gRPC's own default of 4 MiB
// is less than one pool may hold (16 MiB, all of whose values may go to
// one plugin in Configure's inventory, and a 15 MB argument in one step),
// so a valid pool would fail as "received message larger than max". A
// plugin written without this SDK must accept messages of this size too
// (docs/PLUGINS.md).
const MaxMessageSize = 64 << 20

// DialOptions are the options of poolc's connection to a plugin that
// let messages up to MaxMessageSize through.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize))}
}

// serverOptions are the options of a plugin's server that let messages up
// to MaxMessageSize through.
func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize)}
}
