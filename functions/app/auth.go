package app

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/sigv4"
)

// ParseKeys reads access keys from text of the form
//
//	AKID:SECRET[:ACCOUNT[:TOKEN]][,AKID:SECRET[:ACCOUNT[:TOKEN]]...]
//
// ACCOUNT is a 12-digit account id the key acts for (empty: the configured
// one); TOKEN is the session token of temporary credentials, which every
// request signed with the key must then carry. Secrets and tokens of AWS
// hold neither ":" nor ",". Errors name the entry and its access key id,
// never a secret or token.
func ParseKeys(text string) ([]sigv4.Key, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("auth keys: none given; use AKID:SECRET[:ACCOUNT[:TOKEN]], comma-separated")
	}
	var keys []sigv4.Key
	seen := map[string]bool{}
	for i, entry := range strings.Split(text, ",") {
		n := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("auth keys: entry %d is empty", n)
		}
		parts := strings.Split(entry, ":")
		if len(parts) < 2 {
			return nil, fmt.Errorf("auth keys: entry %d has no secret; use AKID:SECRET[:ACCOUNT[:TOKEN]]", n)
		}
		if len(parts) > 4 {
			return nil, fmt.Errorf("auth keys: entry %d (key %s) has %d fields, at most 4: AKID:SECRET[:ACCOUNT[:TOKEN]]", n, printableID(parts[0]), len(parts))
		}
		k := sigv4.Key{AccessKeyID: parts[0], SecretAccessKey: parts[1]}
		if len(parts) > 2 {
			k.AccountID = parts[2]
		}
		if len(parts) > 3 {
			k.SessionToken = parts[3]
			if k.SessionToken == "" {
				return nil, fmt.Errorf("auth keys: entry %d (key %s) has an empty session token", n, printableID(k.AccessKeyID))
			}
		}
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("auth keys: entry %d: %w", n, err)
		}
		if seen[k.AccessKeyID] {
			return nil, fmt.Errorf("auth keys: entry %d: key %s is given twice", n, k.AccessKeyID)
		}
		seen[k.AccessKeyID] = true
		keys = append(keys, k)
	}
	return keys, nil
}

// checkKey says what is wrong with k, naming its access key id only.
func checkKey(k sigv4.Key) error {
	id := k.AccessKeyID
	switch {
	case id == "":
		return fmt.Errorf("empty access key id")
	case strings.Trim(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "":
		return fmt.Errorf("access key id %s: use letters, digits, _ and -", printableID(id))
	case k.SecretAccessKey == "":
		return fmt.Errorf("key %s has an empty secret", id)
	case strings.ContainsAny(k.SecretAccessKey, " \t\r\n"):
		return fmt.Errorf("key %s has a secret with white space", id)
	case k.AccountID != "" && !contract.ValidAccountID(k.AccountID):
		return fmt.Errorf("key %s: bad account id %q: an account id has 12 digits", id, k.AccountID)
	}
	return nil
}

// printableID shows at most 32 bytes of an access key id that may be
// something else pasted in the wrong place.
func printableID(s string) string {
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func (c Config) validateAuth() error {
	switch c.Auth {
	case "", AuthNone:
		if len(c.AuthKeys) > 0 {
			return fmt.Errorf("auth keys given but authentication is %s: set it to %s to check them", cmp.Or(c.Auth, AuthNone), AuthSigV4)
		}
		return nil
	case AuthSigV4:
		if len(c.AuthKeys) == 0 {
			return fmt.Errorf("authentication %s needs at least one key", AuthSigV4)
		}
		seen := map[string]bool{}
		for i, k := range c.AuthKeys {
			if err := checkKey(k); err != nil {
				return fmt.Errorf("auth key %d: %w", i+1, err)
			}
			if seen[k.AccessKeyID] {
				return fmt.Errorf("auth key %d: key %s is given twice", i+1, k.AccessKeyID)
			}
			seen[k.AccessKeyID] = true
		}
		return nil
	}
	return fmt.Errorf("bad authentication %q: use %s or %s", c.Auth, AuthSigV4, AuthNone)
}

// newVerify builds the handler's verifier hook, nil when nothing is checked.
func newVerify(cfg Config, logger *slog.Logger) (func(*http.Request, []byte) (httpapi.Caller, error), error) {
	if cfg.Auth != AuthSigV4 {
		return nil, nil
	}
	v, err := sigv4.New(sigv4.Config{Region: cmp.Or(cfg.Region, "us-east-1"), Keys: cfg.AuthKeys})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(cfg.AuthKeys))
	for i, k := range cfg.AuthKeys {
		ids[i] = k.AccessKeyID
	}
	logger.Info("authentication", "mode", AuthSigV4, "keys", ids)
	return func(r *http.Request, body []byte) (httpapi.Caller, error) {
		c, err := v.Verify(r, body)
		return httpapi.Caller{AccountID: c.AccountID}, err
	}, nil
}
