"""Write operations of the annotation app (HackSoft style: `entity_action`, keyword-only, transactional)."""
