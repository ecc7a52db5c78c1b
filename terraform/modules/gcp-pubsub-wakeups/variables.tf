variable "project_id" {
  description = "Project of the topic."
  type        = string
}

variable "topic" {
  description = "Topic name; each instance makes its own subscription TOPIC-<16 hex>."
  type        = string
  default     = "sluice-wake"

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9._~%+-]{2,200}$", var.topic))
    error_message = "A topic name is 3 to 201 characters (Pub/Sub's 255 less the subscription suffix), starting with a letter."
  }
}

variable "member" {
  description = "The service account member the instances run as (serviceAccount:EMAIL)."
  type        = string
}
