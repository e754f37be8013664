package sdk

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"poolc.dev/poolc/plugins/proto/actuatorv3"
)

// This file is the contract between poolc and its plugins in one place: the
// handshake, the name under which the actuator is dispensed, and the
// go-plugin type that joins the two gRPC adapters (grpc.go).

// PluginName is the name the actuator is served and dispensed under in
// go-plugin's plugin map. A plugin serves exactly this one.
const PluginName = "actuator"

// MagicCookieKey and MagicCookieValue are the environment variable, and its
// value, that poolc sets when it starts a plugin. A plugin started without
// them says it is a plugin and exits. They are not a secret; they only stop
// a plugin binary run by hand from waiting for a host that is not there.
const (
	// MagicCookieKey is the environment variable poolc sets when it
	// starts a plugin.
	MagicCookieKey = "POOLC_PLUGIN"
	// MagicCookieValue is the value of MagicCookieKey a plugin expects.
	MagicCookieValue = "137152e22e0525f0e01901d8e1a24057c6d15665dbb8bc7b"
)

// Handshake is the go-plugin handshake that poolc and its plugins share.
// A plugin that reports another protocol version is refused.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// GRPCPlugin is the actuator as go-plugin sees it. On the plugin side Impl
// is served; on the host side GRPCClient returns an Actuator that calls the
// plugin over gRPC. Only gRPC is supported, not net/rpc.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin

	// Impl is the actuator to serve. It is set on the plugin side only.
	Impl Actuator

	// CallFailed, on the host side, turns the error of a call that did not
	// complete (the plugin died, the connection broke, the call was
	// cancelled) into the diagnostics the call returns. Nil uses
	// CallFailure with no plugin name.
	CallFailed func(method string, err error) Diagnostics
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("sdk: GRPCPlugin has no Impl to serve")
	}
	actuatorv3.RegisterActuatorServer(s, newServer(p.Impl))
	return nil
}

// GRPCClient returns an Actuator that calls the plugin over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	failed := p.CallFailed
	if failed == nil {
		failed = func(method string, err error) Diagnostics {
			return Diagnostics{CallFailure("", method, err)}
		}
	}
	return &client{rpc: actuatorv3.NewActuatorClient(conn), failed: failed}, nil
}
