"""openstacksdk helpers of the lifecycle commands."""
