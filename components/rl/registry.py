"""Registry entries of the rl family (dense_reward, pd_autoscale, ...): data only, importing this
imports nothing. Append your entries to the tables below (one line each, keep them sorted by
paper); a new kind goes in KINDS with its contract."""

KINDS = {
    "envs": {
        "noun": "environment",
        "contract": (
            "A gymnasium.vector.VectorEnv (numpy arrays in and out) with metadata autoreset_mode DISABLED: "
            "reset(seed=None) -> (obs (num_envs, ...), info), step(actions (num_envs,)) -> (obs, reward, "
            "terminated, truncated, info); a finished sub-environment is frozen until the next reset. "
            "Discrete actions (single_action_space.n); obs an array, or a dict whose 'action_mask' key is "
            "the mask (else info['action_mask'], bool (num_envs, n), optional); info['success'] (bool "
            "(num_envs,)) marks successful episodes (else: terminated with positive reward); "
            "`max_episode_steps` bounds an episode. Its random state is env.np_random (saved in checkpoints "
            "by the rollouts data module); components/rl/envs.py. Or a differentiable plant: a gymnasium.Env "
            "in torch whose batched reset/step keep the autograd graph, continuous actions, trained by "
            "backpropagating through it (plant_bptt, not rollouts); components/motor/plants.py."),
    },
    "reward_models": {
        "noun": "reward model",
        "contract": (
            "An nn.Module nested in an on-policy task's `reward:`; per rollout the task calls "
            "reward(episodes) -> (B, T) extra reward per step (added to the environment's), then "
            "reward.observe(episodes) to learn from the outcome-labelled episodes; its state lives in "
            "buffers (checkpointed with the task); components/rl/rewards.py."),
    },
    "replay_buffers": {
        "noun": "replay buffer",
        "contract": (
            "An object nested in an off-policy task's `replay:`; configure(goal_layout or None), "
            "add(episodes, horizon) stores a rollout, ready() says whether updates may start, sample(n) -> "
            "{obs, action, next_obs, reward, terminal, future_obs} tensors (n, ...), goals relabelled when "
            "it relabels; state_dict() / load_state_dict() plain tensors, saved by the task in checkpoints; "
            "components/rl/replay.py."),
    },
}

ENTRIES = {
    "envs": {
        # shared
        "gym_make": "components.rl.envs:gym_make",
        "normalize_observation": "components.rl.envs:normalize_observation",
        # dense_reward
        "slippery_grid": "components.rl.envs:SlipperyGrid",
        # pd_autoscale
        "pd_serving": "components.rl.serving:PDServing",
        # macrl
        "ma_goal_reach": "components.rl.goal_envs:MAGoalReach",
        "vmas_goal": "components.rl.goal_envs:VmasGoal",
    },
    "reward_models": {
        # dense_reward
        "visitation_matching": "components.rl.rewards:VisitationMatching",
    },
    "replay_buffers": {
        # macrl
        "episode_replay": "components.rl.replay:EpisodeReplay",
    },
    "data": {
        "rollouts": "components.rl.data:Rollouts",
    },
    "models": {
        # shared
        "actor_critic": "components.rl.policies:ActorCritic",
        "local_policy": "components.rl.policies:LocalPolicy",
        # dense_reward
        "grid_goal_seeking": "components.rl.policies:GridGoalSeeking",
        # pd_autoscale
        "threshold_autoscaler": "components.rl.autoscalers:ThresholdAutoscaler",
        "static_pool": "components.rl.autoscalers:StaticPool",
        "pool_actor_critic": "components.rl.autoscalers:PoolActorCritic",
        # macrl
        "shared_gaussian_actor": "components.rl.goal_nets:SharedGaussianActor",
        "twin_q": "components.rl.goal_nets:TwinQ",
        "contrastive_critic": "components.rl.goal_nets:ContrastiveCritic",
        "uniform_random": "components.rl.goal_nets:UniformRandom",
    },
    "tasks": {
        "reinforce": "components.rl.tasks:Reinforce",
        "ppo": "components.rl.tasks:PPO",
        "behavior_cloning": "components.rl.tasks:BehaviorCloning",
        # macrl (off-policy)
        "sac": "components.rl.offpolicy:SAC",
        "contrastive_rl": "components.rl.offpolicy:ContrastiveRL",
    },
}
