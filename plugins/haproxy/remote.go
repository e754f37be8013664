package haproxy

import (
	"bytes"
	"context"
	"net"

	"poolc.dev/poolc/internal/sshx"
)

// Tunnel dials HAProxy's TCP admin socket at addr (e.g. "127.0.0.1:9999",
// as the gateway host sees it) through the SSH connection of client.
func Tunnel(client *sshx.Client, addr string) Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		return client.Dial(ctx, "tcp", addr)
	}
}

// SSHFiles writes the gateway host's files over an SSH connection.
type SSHFiles struct {
	Client *sshx.Client
}

var _ Files = SSHFiles{}

// scriptReplace replaces file $1 with stdin through a temporary file
// beside it and a rename, so HAProxy never reads half a file.
const scriptReplace = `set -e
cat > "$1.poolc-tmp"
mv -f "$1.poolc-tmp" "$1"
`

// scriptRead prints file $1, and nothing when it does not exist.
const scriptRead = `if [ -e "$1" ]; then cat "$1"; fi`

// ReadFile implements Files.
func (f SSHFiles) ReadFile(ctx context.Context, path string) ([]byte, error) {
	out, err := f.Client.Run(ctx, []string{"sh", "-c", scriptRead, "sh", path}, nil)
	if len(out.Stdout) == 0 {
		return nil, err
	}
	return out.Stdout, err
}

// WriteFile implements Files.
func (f SSHFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	_, err := f.Client.Run(ctx, []string{"sh", "-c", scriptReplace, "sh", path}, bytes.NewReader(data))
	return err
}
