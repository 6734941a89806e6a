// Package adptest helps test code that takes part in ADP rooms.
//
// # Room fixture
//
// [World] drives one room through the host path with named agents whose
// keys are fixed, and a clock the test moves. [World.Replay] applies what
// the host accepted to a fresh room, as a verifier would, and checks that
// both agree. [VectorRecords] loads a room of the SDK's ADP vectors.
package adptest
