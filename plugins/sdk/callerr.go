package sdk

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CallFailure describes, in words an operator can act on, a call to a
// plugin that failed below the protocol: the error is a gRPC status (or a
// context error), never a finding of the plugin. plugin names the plugin in
// the summary; "" says "the plugin". The summaries read:
//
//	plugin NAME did not respond: connection lost          (Unavailable)
//	plugin NAME did not respond: Apply timed out          (DeadlineExceeded)
//	plugin NAME: Apply cancelled                          (Canceled)
//	plugin NAME does not implement Apply                  (Unimplemented)
//	plugin NAME failed Apply: MESSAGE                     (any other code)
func CallFailure(plugin, method string, err error) Diagnostic {
	who := "plugin"
	if plugin != "" {
		who += " " + plugin
	}
	st := status.Convert(err)
	code := st.Code()
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	d := Diagnostic{Severity: Error}
	switch code {
	case codes.Canceled:
		d.Summary = fmt.Sprintf("%s: %s cancelled", who, method)
		d.Detail = fmt.Sprintf("poolc cancelled %s before the plugin answered.", method)
	case codes.DeadlineExceeded:
		d.Summary = fmt.Sprintf("%s did not respond: %s timed out", who, method)
		d.Detail = fmt.Sprintf("The plugin did not answer %s before its deadline.", method)
	case codes.Unavailable:
		d.Summary = who + " did not respond: connection lost"
		d.Detail = fmt.Sprintf("The connection to the plugin broke during %s (%s). The plugin's output may say why.", method, st.Message())
	case codes.Unimplemented:
		d.Summary = fmt.Sprintf("%s does not implement %s", who, method)
		d.Detail = fmt.Sprintf("The plugin speaks another version of the actuator protocol; poolc speaks version %d.", ProtocolVersion)
	default:
		d.Summary = fmt.Sprintf("%s failed %s: %s", who, method, st.Message())
		d.Detail = fmt.Sprintf("The call ended with gRPC status %s instead of an answer; this is a bug in the plugin.", code)
	}
	return d
}
