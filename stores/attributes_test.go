package stores

import (
	"encoding/json"
	"testing"
)

// The JSON form of Attribute is what the embedded and PostgreSQL stores
// have on disk: changing it would make stored messages unreadable.
func TestAttributeStoredFormIsPinned(t *testing.T) {
	s := "v"
	got, err := json.Marshal(map[string]Attribute{
		"s": {DataType: "String", StringValue: &s},
		"b": {DataType: "Binary", BinaryValue: []byte{0, 0xff}},
		"l": {DataType: "String", StringListValues: []string{"x"}, BinaryListValues: [][]byte{{1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"b":{"BinaryValue":"AP8=","DataType":"Binary"},"l":{"StringListValues":["x"],"BinaryListValues":["AQ=="],"DataType":"String"},"s":{"StringValue":"v","DataType":"String"}}`
	if string(got) != want {
		t.Errorf("stored form =\n%s\nwant\n%s", got, want)
	}
}
