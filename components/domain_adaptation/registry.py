"""Registry entries of the gradual-domain-adaptation family (flowgda): data only, importing this
imports nothing. The flow-matching pieces are shared: components/generative/."""

ENTRIES = {
    "data": {"domain_sequence": "components.domain_adaptation.data:DomainSequence"},
    "models": {"encoder_classifier": "components.domain_adaptation.model:EncoderClassifier"},
    "tasks": {"gradual_domain_adaptation": "components.domain_adaptation.task:GradualDomainAdaptation"},
}
