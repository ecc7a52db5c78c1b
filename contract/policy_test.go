package contract

import (
	"fmt"
	"strings"
	"testing"
)

// Each quota refuses one past it, in a statement list or a single
// statement, and lets the quota itself through.
func TestCheckPolicyQuotas(t *testing.T) {
	list := func(n int, item string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(item, i)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	stmt := func(actions, principals, conditions int) string {
		cond := make([]string, conditions)
		for i := range cond {
			cond[i] = fmt.Sprintf(`"k%d":"v"`, i)
		}
		return fmt.Sprintf(`{"Effect":"Allow","Principal":{"AWS":%s},"Action":%s,"Condition":{"StringEquals":{%s}}}`,
			list(principals, `"arn:aws:iam::%012d:root"`), list(actions, `"sqs:A%d"`), strings.Join(cond, ","))
	}
	for _, c := range []struct {
		policy string
		want   string // "" for accepted
	}{
		{`{"Statement":` + stmt(7, 50, 10) + `}`, ""},
		{`{"Statement":[` + stmt(8, 1, 0) + `]}`, "8 actions were found in a statement from the submitted policy, max allowed is 7"},
		{`{"Statement":` + stmt(8, 1, 0) + `}`, "8 actions were found in a statement from the submitted policy, max allowed is 7"},
		{`{"Statement":` + list(20, `{"Sid":"s%d","Action":"sqs:SendMessage"}`) + `}`, ""},
		{`{"Statement":` + list(21, `{"Sid":"s%d","Action":"sqs:SendMessage"}`) + `}`, "21 statements were found in the submitted policy, max allowed is 20"},
		{`{"Statement":[` + stmt(1, 30, 0) + `,` + stmt(1, 21, 0) + `]}`, "51 principals were found in the submitted policy, max allowed is 50"},
		{`{"Statement":[` + stmt(1, 1, 6) + `,` + stmt(1, 1, 5) + `]}`, "11 conditions were found in the submitted policy, max allowed is 10"},
		{`{"Statement":[{"Principal":"*","Action":"*"}]}`, ""},
		{`{}`, ""},
	} {
		e := CheckPolicyQuotas(c.policy)
		switch {
		case c.want == "" && e != nil:
			t.Errorf("%.80s…: refused (%v), want accepted", c.policy, e)
		case c.want != "" && (e == nil || e.Code != "OverLimit" || e.Message != c.want):
			t.Errorf("%.80s…: %v, want OverLimit %q", c.policy, e, c.want)
		}
	}
}
