package harness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.yaml.in/yaml/v3"
)

// HTTPGet fetches url (an admin API, /metrics) within 30 s and returns the
// body; a status other than 200 is an error carrying the body.
func HTTPGet(ctx context.Context, url string) (string, error) {
	return get(ctx, http.DefaultClient, url, "")
}

func get(ctx context.Context, hc *http.Client, url, token string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

// AdminGet fetches path (such as "/v1/nodes") from the admin API on the
// Unix socket at socket, within 30 s; a status other than 200 is an error
// carrying the body.
func AdminGet(ctx context.Context, socket, path string) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return get(ctx, &http.Client{Transport: tr}, "http://localhost"+path, "")
}

// AdminGetJSON is AdminGet decoding the JSON body into v.
func AdminGetJSON(ctx context.Context, socket, path string, v any) error {
	body, err := AdminGet(ctx, socket, path)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(body), v)
}

// HTTPGetToken is HTTPGet with a bearer token (an admin API over TCP).
func HTTPGetToken(ctx context.Context, url, token string) (string, error) {
	return get(ctx, http.DefaultClient, url, token)
}

// WriteAdminTokens writes a gateway's admin token file (NAME SECRET
// lines, mode 0600) at path with one random token named name, and the
// client's side (the secret alone, mode 0600) at path+".client"; it
// returns the secret.
func WriteAdminTokens(path, name string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(b)
	if err := os.WriteFile(path, []byte(name+" "+secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	if err := os.WriteFile(path+".client", []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	return secret, nil
}

// GetJSON fetches url and decodes its JSON body into v.
func GetJSON(ctx context.Context, url string, v any) error {
	body, err := HTTPGet(ctx, url)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(body), v)
}

// PatchConfig replaces top-level sections of a YAML config file (a gateway
// config written by WriteGatewayConfig gets a cluster or ad section).
func PatchConfig(path string, sections map[string]any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	for k, v := range sections {
		doc[k] = v
	}
	if b, err = yaml.Marshal(doc); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
