package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// Connection says how to reach a Temporal cluster.
type Connection struct {
	HostPort  string
	Namespace string
	// TLS connects over TLS (on by itself with an API key or a client
	// certificate); CA, when set, is the PEM file of the CAs to trust
	// instead of the system's.
	TLS bool
	CA  string
	// Cert and Key are a client certificate and its key (PEM files), for
	// a cluster that authenticates workers by mTLS.
	Cert, Key string
	// APIKey authenticates to a cluster that takes API keys (Temporal
	// Cloud).
	APIKey string
}

// Dial connects to the cluster, logging the SDK's messages through log
// (its routine ones at debug level). It fails fast, naming the address,
// when nothing answers there.
func Dial(ctx context.Context, c Connection, log *zap.Logger) (client.Client, error) {
	if log == nil {
		log = zap.NewNop()
	}
	opts := client.Options{HostPort: c.HostPort, Namespace: c.Namespace, Logger: sdkLogger{log.Named("sdk").Sugar()}}
	tlsConf, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts.ConnectionOptions.TLS = tlsConf
	if c.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w (is the server running? for one machine: temporal server start-dev; see docs/scale-out.md)", c.HostPort, c.Namespace, err)
	}
	return cl, nil
}

// tlsConfig is the connection's TLS, or nil for plain gRPC.
func (c Connection) tlsConfig() (*tls.Config, error) {
	if !c.TLS && c.APIKey == "" && c.Cert == "" && c.CA == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if (c.Cert == "") != (c.Key == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both, or neither")
	}
	if c.Cert != "" {
		pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", c.Cert, c.Key, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.CA)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}

// sdkLogger is the SDK's log.Logger on zap: both take a message and
// key-value pairs.
type sdkLogger struct{ s *zap.SugaredLogger }

func (l sdkLogger) Debug(msg string, kv ...any) { l.s.Debugw(msg, kv...) }
func (l sdkLogger) Info(msg string, kv ...any)  { l.s.Debugw(msg, kv...) } // the SDK's info is routine: poller starts, stops
func (l sdkLogger) Warn(msg string, kv ...any)  { l.s.Warnw(msg, kv...) }
func (l sdkLogger) Error(msg string, kv ...any) { l.s.Errorw(msg, kv...) }
