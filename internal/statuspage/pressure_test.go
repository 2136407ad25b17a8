package statuspage

import "testing"

// A container's stall shows when the kernel gives it, and is marked from
// a tenth of the time stalled.
func TestJVMRowPressure(t *testing.T) {
	for _, tc := range []struct {
		p       *Pressure
		want    string
		pressed bool
	}{
		{nil, "", false},
		{&Pressure{SomeAvg10: 9.99, FullAvg10: 1}, "stall some 10.0% full 1.0%", false},
		{&Pressure{SomeAvg10: 10, FullAvg10: 0}, "stall some 10.0% full 0.0%", true},
	} {
		row := newJVMRow(&JVM{Identity: Identity{PID: 1, Role: "executor"}, ContainerPressure: tc.p})
		if row.Pressure != tc.want || row.Pressed != tc.pressed {
			t.Errorf("%+v: got %q, %v; want %q, %v", tc.p, row.Pressure, row.Pressed, tc.want, tc.pressed)
		}
	}
}
