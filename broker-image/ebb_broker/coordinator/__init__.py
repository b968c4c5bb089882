"""Group coordination: members, generations and committed offsets in __consumer_offsets."""
