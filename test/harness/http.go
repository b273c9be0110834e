package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"go.yaml.in/yaml/v3"
)

// HTTPGet fetches url (an admin API, /metrics) within 30 s and returns the
// body; a status other than 200 is an error carrying the body.
func HTTPGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
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
