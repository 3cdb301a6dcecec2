"""Registry entries of the motor family (motor_adapters): data only, importing this imports nothing.

The plants are entries of the rl family's `envs` kind, of its torch flavour: gymnasium
environments in torch whose reset/step carry gradients (motornet's interface; components/motor/plants.py)."""

ENTRIES = {
    "envs": {
        # motor_adapters (differentiable plants, torch)
        "two_link_arm": "components.motor.plants:TwoLinkArm",
        "motornet_arm26": "components.motor.plants:MotornetArm26",
    },
    "data": {"reach_repertoire": "components.motor.data:ReachRepertoire"},
    "models": {"motor_rnn": "components.motor.models:MotorRNN"},
    "tasks": {"plant_bptt": "components.motor.task:PlantBPTT"},
}
