package temporal

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// Dial connects to the Temporal frontend at hostPort in namespace,
// logging the SDK's messages through log (its debug chatter only with
// debug logging on). It fails fast, naming the address, when nothing
// answers there.
func Dial(ctx context.Context, hostPort, namespace string, log *zap.Logger) (client.Client, error) {
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: namespace, Logger: sdkLogger{log.Named("sdk").Sugar()}})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w (is the server running? for one machine: temporal server start-dev; see docs/scale-out.md)", hostPort, namespace, err)
	}
	return c, nil
}

// sdkLogger is the SDK's log.Logger on zap: both take a message and
// key-value pairs.
type sdkLogger struct{ s *zap.SugaredLogger }

func (l sdkLogger) Debug(msg string, kv ...any) { l.s.Debugw(msg, kv...) }
func (l sdkLogger) Info(msg string, kv ...any)  { l.s.Debugw(msg, kv...) } // the SDK's info is routine: poller starts, stops
func (l sdkLogger) Warn(msg string, kv ...any)  { l.s.Warnw(msg, kv...) }
func (l sdkLogger) Error(msg string, kv ...any) { l.s.Errorw(msg, kv...) }
