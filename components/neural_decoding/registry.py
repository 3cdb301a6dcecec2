"""Registry entries of the neural-decoding family (beemo): data only, importing this imports nothing."""

ENTRIES = {
    "data": {
        "reach_sessions": "components.neural_decoding.reaches:ReachSessions",
        "nwb_reaches": "components.neural_decoding.nwb:NWBReaches",
    },
    "models": {"behavior_decoder": "components.neural_decoding.decoder:BehaviorDecoder"},
    "tasks": {"behavior_decoding": "components.neural_decoding.task:BehaviorDecoding"},
}
