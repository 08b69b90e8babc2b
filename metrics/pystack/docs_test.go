package pystack

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// offsetTable is the table of offsets as docs/python.md shows it: a row a
// field, in the layout's order, a column a version ("—": none).
func offsetTable() string {
	var b strings.Builder
	b.WriteString("| field | 3.10 | 3.11 | 3.12 | 3.13 |\n| --- | ---: | ---: | ---: | ---: |\n")
	typ := reflect.TypeOf(layout{})
	for i := 0; i < typ.NumField(); i++ {
		tag := typ.Field(i).Tag.Get("off")
		if tag == "" {
			continue
		}
		fmt.Fprintf(&b, "| `%s` |", tag)
		for minor := 10; minor <= 13; minor++ {
			v := reflect.ValueOf(layouts[minor]).Field(i).Int()
			if v < 0 {
				b.WriteString(" — |")
			} else {
				fmt.Fprintf(&b, " %d |", v)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestOffsetTableInDocs: docs/python.md shows the table as it is.
func TestOffsetTableInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/python.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := offsetTable(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/python.md's table of offsets is not the table's; it should read:\n%s", want)
	}
}
